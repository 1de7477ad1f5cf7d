// Downstreams in words: a limit and its use in one line, the figures of the last minute, the
// edits of the limits editor, and the client-side history the sparkline draws.
import type { DownstreamFieldsFragment, DownstreamLimitFieldsFragment, QuotaWindow, UpdateDownstreamInput } from '../gql/graphql';

export type Downstream = DownstreamFieldsFragment;
export type DownstreamLimits = DownstreamLimitFieldsFragment;

/** rate renders calls per second: "50/s", "0.5/s", "12.3/s". */
export function rate(v: number): string {
  const r = v >= 100 ? Math.round(v) : Math.round(v * 10) / 10;
  return `${r.toLocaleString('en-US')}/s`;
}

/** rateLimit is "50/s, burst 10", or "no limit". */
export function rateLimit(l: DownstreamLimits): string {
  if (l.ratePerSecond === null) return 'no limit';
  return l.burst === null ? rate(l.ratePerSecond) : `${rate(l.ratePerSecond)}, burst ${l.burst}`;
}

/** quotaLimit is "1,000 per day", or "no quota". */
export function quotaLimit(l: DownstreamLimits): string {
  if (l.quota === null) return 'no quota';
  return `${l.quota.toLocaleString('en-US')} per ${(l.quotaWindow ?? 'HOUR').toLowerCase()}`;
}

/** concurrencyLimit is "16 in flight", or "no limit". */
export function concurrencyLimit(l: DownstreamLimits): string {
  return l.concurrency === null ? 'no limit' : `${l.concurrency} in flight`;
}

/** slowedByPushback reports whether pushback (429, 503) holds the rate below its limit. */
export function slowedByPushback(d: Downstream): boolean {
  const { ratePerSecond } = d.limits;
  const { effectiveRate } = d.stats;
  return ratePerSecond !== null && effectiveRate !== null && effectiveRate < ratePerSecond * 0.995;
}

/** waitsText is "20 waited, 1.2 s in all, 60 ms on average", or "no call waited". */
export function waitsText(s: Downstream['stats']): string {
  if (s.waits === 0) return 'no call waited';
  const avgMs = (s.waitSeconds / s.waits) * 1000;
  const avg = avgMs >= 1000 ? `${(avgMs / 1000).toFixed(1)} s` : `${Math.round(avgMs)} ms`;
  return `${s.waits.toLocaleString('en-US')} waited, ${s.waitSeconds.toFixed(1)} s in all, ${avg} on average`;
}

/** The fields of the limits editor whose refusals show next to their control. */
export const LIMIT_FIELDS = ['ratePerSecond', 'burst', 'concurrency', 'quota', 'quotaWindow'] as const;
export type LimitField = (typeof LIMIT_FIELDS)[number];
export const isLimitField = (f: string | null | undefined): f is LimitField => LIMIT_FIELDS.some((x) => x === f);

/** The editor's draft: numbers may be empty while one types (empty: no change). */
export interface LimitsDraft {
  ratePerSecond: number | '';
  burst: number | '';
  concurrency: number | '';
  quota: number | '';
  quotaWindow: QuotaWindow;
}

export function limitsDraft(l: DownstreamLimits): LimitsDraft {
  return {
    ratePerSecond: l.ratePerSecond ?? '',
    burst: l.burst ?? '',
    concurrency: l.concurrency ?? '',
    quota: l.quota ?? '',
    quotaWindow: l.quotaWindow ?? 'HOUR',
  };
}

/**
 * limitsChanges is the update input with only the limits the draft changes, or null when it
 * changes none. An empty field is no change (the clear buttons remove a limit); the server
 * judges the values, so a zero or a negative number is sent as typed and refused by field.
 */
export function limitsChanges(name: string, l: DownstreamLimits, d: LimitsDraft): UpdateDownstreamInput | null {
  const input: UpdateDownstreamInput = { name };
  let changed = false;
  for (const f of ['ratePerSecond', 'burst', 'concurrency', 'quota'] as const) {
    const v = d[f];
    if (v !== '' && v !== l[f]) {
      input[f] = v;
      changed = true;
    }
  }
  // The window goes with a quota: along with a new quota, or alone for the quota in force.
  const windowNow = l.quotaWindow ?? 'HOUR';
  if (input.quota !== undefined) {
    input.quotaWindow = d.quotaWindow;
  } else if (l.quota !== null && d.quotaWindow !== windowNow) {
    input.quotaWindow = d.quotaWindow;
    changed = true;
  }
  return changed ? input : null;
}

/** How many samples of calls/s the sparkline keeps: one a second, the last two minutes. */
export const HISTORY_SAMPLES = 120;

/**
 * appendSamples adds one sample of calls/s per downstream to the history (at most
 * HISTORY_SAMPLES each) and drops downstreams that are gone.
 */
export function appendSamples(history: ReadonlyMap<string, readonly number[]>, list: readonly Downstream[]): Map<string, number[]> {
  const next = new Map<string, number[]>();
  for (const d of list) {
    const prev = history.get(d.name) ?? [];
    next.set(d.name, [...prev, d.stats.callsPerSecond].slice(-HISTORY_SAMPLES));
  }
  return next;
}
