import { describe, expect, it } from 'vitest';

import { cronInWords, describeSchedule } from './cron';

describe('describeSchedule', () => {
  it.each([
    // 6 fields, seconds first (Baton's scheduler)
    ['0 0 4 * * *', 'every day at 04:00'],
    ['30 15 9 * * *', 'every day at 09:15:30'],
    ['0 30 9 * * 1-5', 'every weekday (Monday to Friday) at 09:30'],
    ['0 0 9,17 * * *', 'every day at 09:00 and 17:00'],
    ['0 0 6 * * MON,WED,FRI', 'every Monday, Wednesday and Friday at 06:00'],
    ['0 0 10 * * 0', 'every Sunday at 10:00'],
    ['0 0 10 * * SAT,SUN', 'every weekend day (Saturday and Sunday) at 10:00'],
    ['0 0 0 1 * *', 'every month on day 1 at 00:00'],
    ['0 0 3 1,15 * *', 'every month on day 1 and 15 at 03:00'],
    ['0 0 12 25 12 *', 'every year on 25 December at 12:00'],
    ['0 */5 * * * *', 'every 5 minutes'],
    ['0 15 * * * *', 'every hour at minute 15'],
    ['0 0 */2 * * *', 'every 2 hours at minute 0'],
    ['*/10 * * * * *', 'every 10 seconds'],
    ['* * * * * *', 'every second'],
    ['0 * * * * *', 'every minute'],
    // 5 fields, minute first
    ['0 4 * * *', 'every day at 04:00'],
    ['*/15 * * * *', 'every 15 minutes'],
    ['* * * * *', 'every minute'],
    ['45 23 * * 1-5', 'every weekday (Monday to Friday) at 23:45'],
    // descriptors
    ['@daily', 'every day at 00:00'],
    ['@midnight', 'every day at 00:00'],
    ['@hourly', 'every hour at minute 0'],
    ['@weekly', 'every Sunday at 00:00'],
    ['@monthly', 'every month on day 1 at 00:00'],
    ['@yearly', 'every year on 1 January at 00:00'],
    ['@annually', 'every year on 1 January at 00:00'],
    ['@every 1h30m', 'every 1h30m'],
    ['', 'manual runs only'],
    ['  0  0  4 * * * ', 'every day at 04:00'],
  ])('%j reads "%s"', (cron, words) => {
    expect(describeSchedule(cron)).toBe(words);
  });

  it('falls back to cronstrue for shapes it has no short phrase for', () => {
    expect(describeSchedule('0 0 4 * 1-6 *')).toMatch(/04:00/);
    expect(describeSchedule('0 0 4 L * *')).toMatch(/last day/i);
  });

  it('does not describe values out of range', () => {
    expect(describeSchedule('61 * * * *')).toBe('cron "61 * * * *"');
    expect(describeSchedule('0 0 24 * * *')).toBe('cron "0 0 24 * * *"');
    expect(describeSchedule('0 0 4 32 * *')).toBe('cron "0 0 4 32 * *"');
    expect(describeSchedule('0 */90 * * * *')).toBe('every 90 minutes');
  });

  it('never throws on nonsense', () => {
    expect(describeSchedule('not a cron')).toBe('cron "not a cron"');
    expect(describeSchedule('@sometimes')).toBe('cron "@sometimes"');
  });
});

describe('cronInWords', () => {
  it('adds the time zone', () => {
    expect(cronInWords('0 0 4 * * *', 'Asia/Seoul')).toBe('every day at 04:00, Asia/Seoul');
    expect(cronInWords('@daily', 'Europe/Berlin')).toBe('every day at 00:00, Europe/Berlin');
  });
  it('defaults the zone to UTC', () => {
    expect(cronInWords('0 4 * * *', '')).toBe('every day at 04:00, UTC');
  });
  it('leaves zone-free schedules alone', () => {
    expect(cronInWords('', 'Asia/Seoul')).toBe('manual runs only');
    expect(cronInWords('@every 10m', 'Asia/Seoul')).toBe('every 10m');
  });
});
