// The dashboard's live state: the newest run of each job as runEvents reports it.
import type { RunEventKind, RunEventsSubscription } from '../gql/graphql';
import type { RunSummary } from '../api/runs';
import { isActive } from '../model/status';

export interface LiveRuns {
  /** The newest run seen per job. */
  byJob: Record<string, RunSummary>;
  /** Bumped on every STARTED or FINISHED event, so views refetch what events do not carry. */
  lifecycle: number;
  lastKind: RunEventKind | null;
}

export const emptyLiveRuns: LiveRuns = { byJob: {}, lifecycle: 0, lastKind: null };

/** reduceRunEvents folds one runEvents message into the live state. */
export function reduceRunEvents(prev: LiveRuns | undefined, data: RunEventsSubscription): LiveRuns {
  const p = prev ?? emptyLiveRuns;
  const { kind, run } = data.runEvents;
  const lifecycle = kind === 'STARTED' || kind === 'FINISHED' || kind === 'STATUS_CHANGED' ? p.lifecycle + 1 : p.lifecycle;
  return { byJob: { ...p.byJob, [run.jobName]: run }, lifecycle, lastKind: kind };
}

/** withRun records a run the console itself just started or changed. */
export function withRun(p: LiveRuns, run: RunSummary): LiveRuns {
  return { ...p, byJob: { ...p.byJob, [run.jobName]: run } };
}

/**
 * currentRuns merges a job's fetched active and last run with the newest live one: a live
 * active run is the active run; a live finished run ends the fetched active run of the same id
 * and becomes the last run.
 */
export function currentRuns(
  fetched: { activeRun: RunSummary | null | undefined; lastRun: RunSummary | null | undefined },
  live: RunSummary | undefined,
): { active: RunSummary | null; last: RunSummary | null } {
  let active = fetched.activeRun ?? null;
  let last = fetched.lastRun ?? null;
  if (live) {
    const newer = !last || Date.parse(live.startedAt) >= Date.parse(last.startedAt);
    if (isActive(live.status)) {
      if (!active || active.id === live.id || newer) active = live;
      if (last?.id === live.id || newer) last = live;
    } else {
      if (active?.id === live.id) active = null;
      if (last?.id === live.id || newer) last = live;
    }
  }
  return { active, last };
}
