import { describe, expect, it } from 'vitest';

import { downstream, limits } from '../test/downstreams';
import { appendSamples, HISTORY_SAMPLES, limitsChanges, limitsDraft, quotaLimit, rate, rateLimit, slowedByPushback, waitsText } from './downstreams';

describe('downstream words', () => {
  it('renders rates, limits and waits', () => {
    expect(rate(42.37)).toBe('42.4/s');
    expect(rate(1234.4)).toBe('1,234/s');
    expect(rateLimit(limits)).toBe('50/s, burst 10');
    expect(rateLimit({ ...limits, ratePerSecond: null, burst: null })).toBe('no limit');
    expect(quotaLimit({ ...limits, quota: 1000, quotaWindow: 'DAY' })).toBe('1,000 per day');
    expect(quotaLimit(limits)).toBe('no quota');
    expect(waitsText(downstream().stats)).toBe('no call waited');
    expect(waitsText(downstream({}, { waits: 20, waitSeconds: 1.2 }).stats)).toBe('20 waited, 1.2 s in all, 60 ms on average');
  });
  it('says pushback slowed a downstream only when the effective rate is below the limit', () => {
    expect(slowedByPushback(downstream())).toBe(false);
    expect(slowedByPushback(downstream({}, { effectiveRate: 31 }))).toBe(true);
    expect(slowedByPushback(downstream({ limits: { ...limits, ratePerSecond: null } }, { effectiveRate: null }))).toBe(false);
  });
});

describe('limitsChanges', () => {
  it('sends only what the draft changes, nothing for an empty field, and null for no change', () => {
    const d = limitsDraft(limits);
    expect(limitsChanges('provider', limits, d)).toBeNull();
    expect(limitsChanges('provider', limits, { ...d, burst: '' })).toBeNull();
    expect(limitsChanges('provider', limits, { ...d, ratePerSecond: 20.5, concurrency: 0 })).toEqual({
      name: 'provider',
      ratePerSecond: 20.5,
      concurrency: 0,
    });
  });
  it('sends the window with a new quota, or alone for the quota in force', () => {
    const d = limitsDraft(limits);
    expect(limitsChanges('provider', limits, { ...d, quota: 1000 })).toEqual({ name: 'provider', quota: 1000, quotaWindow: 'HOUR' });
    expect(limitsChanges('provider', limits, { ...d, quotaWindow: 'DAY' })).toBeNull();
    const withQuota = { ...limits, quota: 1000, quotaWindow: 'HOUR' as const };
    expect(limitsChanges('provider', withQuota, { ...limitsDraft(withQuota), quotaWindow: 'DAY' })).toEqual({ name: 'provider', quotaWindow: 'DAY' });
  });
});

describe('appendSamples', () => {
  it('keeps one sample per answer for each downstream, bounded, and forgets the gone', () => {
    let h = appendSamples(new Map(), [downstream(), downstream({ name: 'court' }, { callsPerSecond: 1 })]);
    h = appendSamples(h, [downstream({}, { callsPerSecond: 7 })]);
    expect(h.get('provider')).toEqual([42.37, 7]);
    expect(h.has('court')).toBe(false);
    for (let i = 0; i < HISTORY_SAMPLES + 5; i++) h = appendSamples(h, [downstream({}, { callsPerSecond: i })]);
    expect(h.get('provider')).toHaveLength(HISTORY_SAMPLES);
    expect(h.get('provider')?.at(-1)).toBe(HISTORY_SAMPLES + 4);
  });
});
