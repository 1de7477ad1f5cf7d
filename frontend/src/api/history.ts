// A job's history over a window: the query, and its buckets turned into chart rows.
import { graphql } from '../gql';
import type { HistoryWindow, JobHistoryQuery as JobHistoryQueryResult, RunStatus } from '../gql/graphql';

export const JobHistoryQuery = graphql(`
  query JobHistory($name: String!, $window: HistoryWindow!) {
    job(name: $name) {
      id
      history(window: $window) {
        window
        bucketSeconds
        from
        to
        now
        failureClasses
        buckets {
          start
          end
          runs {
            status
            count
          }
          ended
          durationP50Seconds
          durationP95Seconds
          processed
          activeSeconds
          itemsPerSecond
          failures {
            class
            count
            rate
          }
          failureRate
          calls
          downstreamErrors
          rejects
          downstreamErrorRate
        }
      }
    }
  }
`);

/** The history as the query returns it. */
export type JobHistoryData = NonNullable<JobHistoryQueryResult['job']>['history'];

/** HISTORY_WINDOWS are the windows the job page offers, with their labels. */
export const HISTORY_WINDOWS: { value: HistoryWindow; label: string; bucket: string }[] = [
  { value: 'LAST_24_HOURS', label: '24 h', bucket: 'hourly' },
  { value: 'LAST_7_DAYS', label: '7 d', bucket: '6-hourly' },
  { value: 'LAST_30_DAYS', label: '30 d', bucket: 'daily' },
];

/** ENDED_STATUSES are the statuses an ended run holds, in the order the runs chart stacks them. */
export const ENDED_STATUSES: RunStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED'];

/** One bucket as the charts draw it. Rates are percentages; null means "nothing to measure". */
export interface HistoryRow {
  /** Start of the bucket, ms since the epoch. */
  t: number;
  /** The bucket's start in the viewer's zone, as the x axis reads. */
  label: string;
  runs: Record<RunStatus, number>;
  ended: number;
  p50: number | null;
  p95: number | null;
  itemsPerSecond: number | null;
  processed: number;
  /** Failed items per class, as a percentage of the bucket's processed items. */
  failurePct: Record<string, number | null>;
  failed: number;
  calls: number;
  downstreamErrors: number;
  downstreamPct: number | null;
}

/** Totals over the whole window, for the chart captions. */
export interface HistoryTotals {
  ended: number;
  runs: Record<RunStatus, number>;
  processed: number;
  activeSeconds: number;
  failed: number;
  failures: Record<string, number>;
  calls: number;
  downstreamErrors: number;
}

const pct = (r: number | null | undefined): number | null => (r === null || r === undefined ? null : r * 100);

const labelFormats = new Map<string, Intl.DateTimeFormat>();

/**
 * bucketLabel renders a bucket's start for the x axis in the viewer's zone (or timeZone):
 * "14:00" for hourly buckets, "Tue 18:00" for 6-hourly ones, "03 Mar" for days.
 */
export function bucketLabel(iso: string, bucketSeconds: number, timeZone?: string): string {
  const key = `${bucketSeconds}|${timeZone ?? ''}`;
  let f = labelFormats.get(key);
  if (!f) {
    const opts: Intl.DateTimeFormatOptions =
      bucketSeconds >= 86400
        ? { day: '2-digit', month: 'short' }
        : bucketSeconds > 3600
          ? { weekday: 'short', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }
          : { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' };
    f = new Intl.DateTimeFormat('en-GB', timeZone ? { ...opts, timeZone } : opts);
    labelFormats.set(key, f);
  }
  return f.format(new Date(iso));
}

const emptyRuns = (): Record<RunStatus, number> => ({ PENDING: 0, STARTING: 0, RUNNING: 0, SUCCEEDED: 0, FAILED: 0, CANCELLED: 0, PAUSED: 0 });

/** historyRows turns the history's buckets into chart rows, oldest first. */
export function historyRows(h: JobHistoryData, timeZone?: string): HistoryRow[] {
  return h.buckets.map((b) => {
    const runs = emptyRuns();
    for (const r of b.runs) runs[r.status] = r.count;
    const failurePct: Record<string, number | null> = {};
    for (const c of h.failureClasses) failurePct[c] = b.processed > 0 ? 0 : null;
    let failed = 0;
    for (const f of b.failures) {
      failurePct[f.class] = pct(f.rate);
      failed += f.count;
    }
    return {
      t: Date.parse(b.start),
      label: bucketLabel(b.start, h.bucketSeconds, timeZone),
      runs,
      ended: b.ended,
      p50: b.durationP50Seconds ?? null,
      p95: b.durationP95Seconds ?? null,
      itemsPerSecond: b.itemsPerSecond ?? null,
      processed: b.processed,
      failurePct,
      failed,
      calls: b.calls,
      downstreamErrors: b.downstreamErrors,
      downstreamPct: pct(b.downstreamErrorRate),
    };
  });
}

/** historyTotals sums the history's buckets over the window. */
export function historyTotals(h: JobHistoryData): HistoryTotals {
  const t: HistoryTotals = { ended: 0, runs: emptyRuns(), processed: 0, activeSeconds: 0, failed: 0, failures: {}, calls: 0, downstreamErrors: 0 };
  for (const b of h.buckets) {
    t.ended += b.ended;
    for (const r of b.runs) t.runs[r.status] += r.count;
    t.processed += b.processed;
    t.activeSeconds += b.activeSeconds;
    for (const f of b.failures) {
      t.failed += f.count;
      t.failures[f.class] = (t.failures[f.class] ?? 0) + f.count;
    }
    t.calls += b.calls;
    t.downstreamErrors += b.downstreamErrors;
  }
  return t;
}
