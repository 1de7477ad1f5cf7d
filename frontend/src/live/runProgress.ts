// The run page's live state: the newest snapshot from runProgress, progress samples for the
// rate and ETA, a per-second items/s series for the sparkline, and the status changes seen.
import type { RunLiveFieldsFragment, RunStatus } from '../gql/graphql';
import { ratePerSecond, type ProgressSample } from '../model/time';

export interface StatusChange {
  status: RunStatus;
  at: string;
}

export interface LiveRun {
  run: RunLiveFieldsFragment;
  samples: ProgressSample[];
  /** items/s, at most one point a second, the newest last (60 points). */
  rates: number[];
  lastRateAt: number;
  changes: StatusChange[];
  updates: number;
  /** When the newest snapshot arrived (ms), for ages counted on from it (a shard's lease age). */
  receivedAt: number;
}

const SAMPLE_WINDOW_MS = 120_000;
const RATE_WINDOW_MS = 5_000;
const RATE_POINTS = 60;

/** foldRun adds one snapshot of a run, seen at time now, to the live state. */
export function foldRun(prev: LiveRun | undefined, run: RunLiveFieldsFragment, now: number): LiveRun {
  const samples = [...(prev?.samples ?? []), { at: now, processed: run.progress.processed }].filter((s) => now - s.at <= SAMPLE_WINDOW_MS);
  let rates = prev?.rates ?? [];
  let lastRateAt = prev?.lastRateAt ?? 0;
  const rate = ratePerSecond(samples, RATE_WINDOW_MS);
  if (rate !== null) {
    if (now - lastRateAt >= 1000 || rates.length === 0) {
      rates = [...rates, rate].slice(-RATE_POINTS);
      lastRateAt = now;
    } else {
      rates = [...rates.slice(0, -1), rate];
    }
  }
  const changes = prev?.changes ?? [];
  const last = changes[changes.length - 1];
  const nextChanges = last?.status === run.status ? changes : [...changes, { status: run.status, at: new Date(now).toISOString() }];
  return { run, samples, rates, lastRateAt, changes: nextChanges, updates: (prev?.updates ?? 0) + 1, receivedAt: now };
}

/** reduceRunProgress is foldRun for urql's useSubscription. */
export function reduceRunProgress(prev: LiveRun | undefined, data: { runProgress: RunLiveFieldsFragment }): LiveRun {
  return foldRun(prev, data.runProgress, Date.now());
}

/**
 * currentRate is the live rate when samples allow, else the average since activation (a page
 * opened mid-run has one snapshot only).
 */
export function currentRate(live: LiveRun | undefined, run: { progress: { processed: number }; activatedAt?: string | null; startedAt: string }, now: number): number | null {
  const r = live ? ratePerSecond(live.samples, RATE_WINDOW_MS) : null;
  if (r !== null && live && live.samples.length >= 3) return r;
  const since = Date.parse(run.activatedAt ?? run.startedAt);
  if (Number.isNaN(since) || now <= since || run.progress.processed === 0) return r;
  return run.progress.processed / ((now - since) / 1000);
}
