// The runs page's filter: read from and written to the URL's query string (so reload and
// back/forward keep it), turned into the API's RunsFilter, and matched against live runs.
import type { RunStatus, RunTrigger, RunsFilter } from '../gql/graphql';

export const RUN_STATUSES: RunStatus[] = ['STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED'];
export const RUN_TRIGGERS: RunTrigger[] = ['SCHEDULED', 'MANUAL', 'REPLAY', 'RECONCILE', 'AUTO_RESUME'];

/** Relative time windows: runs requested within the last hour, day, week or month. */
export const WINDOWS = {
  '1h': 3600_000,
  '24h': 86_400_000,
  '7d': 7 * 86_400_000,
  '30d': 30 * 86_400_000,
} as const;
export type RunsWindow = keyof typeof WINDOWS;

/** The filter as the page holds it. Empty values select everything. */
export interface RunsFilterState {
  job: string;
  statuses: RunStatus[];
  triggers: RunTrigger[];
  instance: string;
  /** A relative window (from now), or null. */
  window: RunsWindow | null;
  /** Absolute bounds (RFC 3339), or '' for none. */
  from: string;
  before: string;
  /** A run number, or null. */
  number: number | null;
}

export const emptyRunsFilter: RunsFilterState = {
  job: '',
  statuses: [],
  triggers: [],
  instance: '',
  window: null,
  from: '',
  before: '',
  number: null,
};

/** What of the URL could not be read, in words; the rest of the filter still applies. */
export interface ParsedRunsFilter {
  filter: RunsFilterState;
  problems: string[];
}

function list<T extends string>(raw: string | null, allowed: readonly T[], what: string, problems: string[]): T[] {
  if (!raw) return [];
  const out: T[] = [];
  for (const v of raw.split(',')) {
    const u = v.trim().toUpperCase();
    if (!u) continue;
    if ((allowed as readonly string[]).includes(u)) {
      if (!out.includes(u as T)) out.push(u as T);
    } else problems.push(`Unknown ${what} "${v}" ignored.`);
  }
  return out;
}

function time(raw: string | null, what: string, problems: string[]): string {
  if (!raw) return '';
  const t = Date.parse(raw);
  if (Number.isNaN(t)) {
    problems.push(`"${raw}" is not a time: the ${what} bound is ignored.`);
    return '';
  }
  return new Date(t).toISOString();
}

/**
 * parseRunNumber reads a run number as an operator types it: "42" or "#42". Anything else is
 * null.
 */
export function parseRunNumber(raw: string): number | null {
  const m = /^\s*#?\s*(\d{1,15})\s*$/.exec(raw);
  if (!m) return null;
  const n = Number(m[1]);
  return n > 0 ? n : null;
}

/** parseRunsFilter reads the filter from a URL query string. */
export function parseRunsFilter(params: URLSearchParams): ParsedRunsFilter {
  const problems: string[] = [];
  const f: RunsFilterState = { ...emptyRunsFilter };
  f.job = params.get('job')?.trim() ?? '';
  f.statuses = list(params.get('status'), RUN_STATUSES, 'status', problems);
  f.triggers = list(params.get('trigger'), RUN_TRIGGERS, 'trigger', problems);
  f.instance = params.get('instance')?.trim() ?? '';
  const w = params.get('window');
  if (w) {
    if (w in WINDOWS) f.window = w as RunsWindow;
    else problems.push(`Unknown time window "${w}" ignored.`);
  }
  f.from = time(params.get('from'), 'from', problems);
  f.before = time(params.get('before'), 'before', problems);
  if (f.from && f.before && Date.parse(f.from) >= Date.parse(f.before)) {
    problems.push('"from" is not before "before": the time range is ignored.');
    f.from = '';
    f.before = '';
  }
  const n = params.get('number');
  if (n) {
    f.number = parseRunNumber(n);
    if (f.number === null) problems.push(`"${n}" is not a run number.`);
  }
  return { filter: f, problems };
}

/** runsFilterParams writes the filter as a query string: only what is set, in a fixed order. */
export function runsFilterParams(f: RunsFilterState): URLSearchParams {
  const p = new URLSearchParams();
  if (f.job) p.set('job', f.job);
  if (f.statuses.length) p.set('status', f.statuses.join(','));
  if (f.triggers.length) p.set('trigger', f.triggers.join(','));
  if (f.instance) p.set('instance', f.instance);
  if (f.window) p.set('window', f.window);
  if (f.from) p.set('from', f.from);
  if (f.before) p.set('before', f.before);
  if (f.number !== null) p.set('number', String(f.number));
  return p;
}

/** isEmptyRunsFilter reports whether the filter selects every run. */
export function isEmptyRunsFilter(f: RunsFilterState): boolean {
  return runsFilterParams(f).toString() === '';
}

/**
 * startedFrom is the filter's lower time bound at now: the later of its absolute bound and
 * its window's start.
 */
export function startedFrom(f: RunsFilterState, now: number): string | null {
  const bounds: number[] = [];
  if (f.from) bounds.push(Date.parse(f.from));
  if (f.window) bounds.push(now - WINDOWS[f.window]);
  if (bounds.length === 0) return null;
  return new Date(Math.max(...bounds)).toISOString();
}

/** toRunsFilterInput is the API's filter for f at time now. */
export function toRunsFilterInput(f: RunsFilterState, now: number): RunsFilter {
  const out: RunsFilter = {};
  if (f.job) out.jobName = f.job;
  if (f.statuses.length) out.statuses = f.statuses;
  if (f.triggers.length) out.triggers = f.triggers;
  if (f.instance) out.instance = f.instance;
  const from = startedFrom(f, now);
  if (from) out.startedFrom = from;
  if (f.before) out.startedBefore = f.before;
  if (f.number !== null) out.number = f.number;
  return out;
}

/** The fields of a run the filter looks at. */
export interface FilterableRun {
  number: number;
  jobName: string;
  status: RunStatus;
  trigger: RunTrigger;
  instance: string;
  startedAt: string;
}

/** matchesRunsFilter reports whether run belongs in the list f selects, at time now. */
export function matchesRunsFilter(run: FilterableRun, f: RunsFilterState, now: number): boolean {
  if (f.job && run.jobName !== f.job) return false;
  if (f.statuses.length && !f.statuses.includes(run.status)) return false;
  if (f.triggers.length && !f.triggers.includes(run.trigger)) return false;
  if (f.instance && run.instance !== f.instance) return false;
  if (f.number !== null && run.number !== f.number) return false;
  const started = Date.parse(run.startedAt);
  const from = startedFrom(f, now);
  if (from && started < Date.parse(from)) return false;
  if (f.before && started >= Date.parse(f.before)) return false;
  return true;
}
