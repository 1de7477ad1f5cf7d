import { describe, expect, it } from 'vitest';

import { etaMs, formatDateTime, formatDuration, formatEta, formatPercent, formatRelative, ratePerSecond, timeZones } from './time';

describe('formatDuration', () => {
  it.each([
    [0, '0ms'],
    [850, '850ms'],
    [1000, '1s'],
    [45_999, '45s'],
    [60_000, '1m 00s'],
    [185_000, '3m 05s'],
    [3_600_000, '1h 00m'],
    [7_380_000, '2h 03m'],
    [86_400_000, '1d 00h'],
    [3 * 86_400_000 + 4 * 3_600_000 + 59_000, '3d 04h'],
    [-5000, '0ms'],
  ])('%d ms → %s', (ms, s) => expect(formatDuration(ms)).toBe(s));
  it('shows a dash for non-finite input', () => expect(formatDuration(Infinity)).toBe('—'));
});

describe('ratePerSecond', () => {
  it('needs two samples', () => {
    expect(ratePerSecond([])).toBeNull();
    expect(ratePerSecond([{ at: 0, processed: 5 }])).toBeNull();
  });
  it('measures over the window', () => {
    const s = [
      { at: 0, processed: 0 },
      { at: 10_000, processed: 100 },
      { at: 20_000, processed: 300 },
    ];
    expect(ratePerSecond(s, 10_000)).toBe(20);
    expect(ratePerSecond(s, 60_000)).toBe(15);
  });
  it('is never negative (a resumed run restarts its count)', () => {
    expect(ratePerSecond([{ at: 0, processed: 10 }, { at: 1000, processed: 0 }])).toBe(0);
  });
});

describe('ETA', () => {
  it('is unknown without a total or a rate', () => {
    expect(etaMs(null, 10, 5)).toBeNull();
    expect(etaMs(100, 10, null)).toBeNull();
    expect(formatEta(null)).toBe('unknown');
  });
  it('is done at the total', () => {
    expect(etaMs(100, 100, 0)).toBe(0);
    expect(etaMs(100, 120, 3)).toBe(0);
    expect(formatEta(0)).toBe('done');
  });
  it('is stalled when nothing moves', () => {
    expect(etaMs(100, 10, 0)).toBe(Infinity);
    expect(formatEta(Infinity)).toBe('stalled');
  });
  it('divides what is left by the rate', () => {
    expect(etaMs(600, 300, 10)).toBe(30_000);
    expect(formatEta(etaMs(600, 300, 10))).toBe('about 30s');
    expect(formatEta(etaMs(1000, 0, 2))).toBe('about 8m 20s');
  });
});

describe('timestamps', () => {
  it('says how far away a moment is', () => {
    const now = Date.parse('2026-05-01T00:00:00Z');
    expect(formatRelative('2026-05-01T00:03:05Z', now)).toBe('in 3m 05s');
    expect(formatRelative('2026-04-30T23:59:48Z', now)).toBe('12s ago');
    expect(formatRelative('2026-05-01T00:00:00.400Z', now)).toBe('now');
    expect(formatRelative('garbage', now)).toBe('—');
  });
  it('formats in the job time zone', () => {
    expect(formatDateTime('2026-04-30T19:00:00Z', 'Asia/Seoul')).toBe('Fri, 01 May 2026, 04:00:00');
    expect(formatDateTime('2026-05-01T04:00:00Z', 'UTC')).toBe('Fri, 01 May 2026, 04:00:00');
  });
  it('falls back to UTC for an unknown zone', () => {
    expect(formatDateTime('2026-05-01T04:00:00Z', 'Mars/Olympus')).toBe('Fri, 01 May 2026, 04:00:00');
  });
  it('lists zones with UTC first', () => {
    const z = timeZones();
    expect(z[0]).toBe('UTC');
    expect(z).toContain('Asia/Seoul');
    expect(z.filter((x) => x === 'UTC')).toHaveLength(1);
  });
  it('formats percentages', () => {
    expect(formatPercent(42.44)).toBe('42.4%');
    expect(formatPercent(100)).toBe('100.0%');
  });
});
