// Auto-resume in words: a job's policy in one line, the edits of the policy editor, and what
// a run page says about the chain of automatic resumes a run belongs to.
import type { AutoResumeOutcome, ResumeCause, UpdateJobAutoResumeInput } from '../gql/graphql';
import { formatDuration } from './time';
import type { Meta } from './status';

/** A job's auto-resume policy as the API gives it. */
export interface AutoResumePolicy {
  enabled: boolean;
  maxAttempts: number;
  backoffSeconds: number;
  on: readonly ResumeCause[];
}

const CAUSE: Record<ResumeCause, Meta> = {
  LEASE_EXPIRED: { label: 'Holder died', color: 'orange', description: 'The worker stopped renewing its lease (killed, lost host, stalled): the recoverer ended the run.' },
  SHUTDOWN: { label: 'Instance shut down', color: 'blue', description: 'The instance running it shut down mid-run, as in a rolling deploy.' },
  DATABASE: { label: 'Database went away', color: 'grape', description: 'A write of the run failed because the database went away: a restart or a failover.' },
};

/** RESUME_CAUSES lists every cause, in display order. */
export const RESUME_CAUSES: ResumeCause[] = Object.keys(CAUSE) as ResumeCause[];

export function resumeCauseMeta(c: ResumeCause): Meta {
  return CAUSE[c];
}

/** seconds renders a short span the way the auto-resume lines read: "5 s", "2m 30s". */
export function seconds(n: number): string {
  const s = Math.max(0, Math.round(n));
  return s < 60 ? `${s} s` : formatDuration(s * 1000);
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;

/** policySummary is the policy in one line: "auto-resume on · 3 attempts · 5 s". */
export function policySummary(p: AutoResumePolicy): string {
  if (!p.enabled) return 'auto-resume off';
  if (p.on.length === 0) return 'auto-resume on · no cause covered';
  const causes = p.on.length === RESUME_CAUSES.length ? '' : ` · ${p.on.map((c) => CAUSE[c].label.toLowerCase()).join(', ')}`;
  return `auto-resume on · ${plural(p.maxAttempts, 'attempt', 'attempts')} · ${seconds(p.backoffSeconds)}${causes}`;
}

/** The editor's draft: numbers may be empty while one types. */
export interface PolicyDraft {
  enabled: boolean;
  maxAttempts: number | '';
  backoffSeconds: number | '';
  on: readonly ResumeCause[];
}

export function draftOf(p: AutoResumePolicy): PolicyDraft {
  return { enabled: p.enabled, maxAttempts: p.maxAttempts, backoffSeconds: p.backoffSeconds, on: [...p.on] };
}

/** sameCauses compares two sets of causes, in any order. */
function sameCauses(a: readonly ResumeCause[], b: readonly ResumeCause[]): boolean {
  return a.length === b.length && a.every((c) => b.includes(c));
}

/**
 * policyChanges is the update input with only the fields the draft changes, or null when it
 * changes nothing. Causes are sent in display order. An empty number field is no change; the
 * server judges the values.
 */
export function policyChanges(name: string, p: AutoResumePolicy, d: PolicyDraft): UpdateJobAutoResumeInput | null {
  const input: UpdateJobAutoResumeInput = { name };
  let changed = false;
  if (d.enabled !== p.enabled) {
    input.enabled = d.enabled;
    changed = true;
  }
  if (d.maxAttempts !== '' && d.maxAttempts !== p.maxAttempts) {
    input.maxAttempts = d.maxAttempts;
    changed = true;
  }
  if (d.backoffSeconds !== '' && d.backoffSeconds !== p.backoffSeconds) {
    input.backoffSeconds = d.backoffSeconds;
    changed = true;
  }
  if (!sameCauses(d.on, p.on)) {
    input.on = RESUME_CAUSES.filter((c) => d.on.includes(c));
    changed = true;
  }
  return changed ? input : null;
}

const OUTCOME: Record<AutoResumeOutcome, Meta> = {
  PENDING: { label: 'Resume pending', color: 'blue', description: 'The run waits for its automatic resume.' },
  RESUMED: { label: 'Resumed', color: 'teal', description: 'An automatic RESUME run continues it.' },
  EXHAUSTED: { label: 'Gave up', color: 'red', description: 'It was the last attempt the policy allows: a person must resume it.' },
  SUPERSEDED: { label: 'Superseded', color: 'gray', description: 'A later run of the job started before the resume was due.' },
  OFF: { label: 'Not resumed', color: 'gray', description: 'The job’s policy was off, or did not cover how the run ended.' },
};

export function outcomeMeta(o: AutoResumeOutcome): Meta {
  return OUTCOME[o];
}

/** What a run page needs to say about a run's chain. Runs are global run ids. */
export interface ChainRun {
  attempt: number;
  /** The run this one continues, if it is an automatic resume. */
  resumedFrom: string | null;
  autoResume: {
    outcome: AutoResumeOutcome;
    dueAt: string | null | undefined;
    maxAttempts: number;
    resumedBy: string | null;
  } | null;
  /** The job's current maximum attempts. */
  maxAttempts: number;
}

/** A line of the chain: words, optionally followed by a link to a run. */
export interface ChainLine {
  key: 'attempt' | AutoResumeOutcome;
  text: string;
  /** The run (a global id) to link after the text, after label. */
  link?: { label: string; run: string };
  color?: string;
}

/**
 * chainLines describes a run's place in its chain of automatic resumes at time now (ms):
 * "auto-resume 2 of 3 · resumed from #41", then what became of its end: "auto-resume due in
 * 4 s", "resumed by #44", "gave up after 3 attempts", "not resumed: policy off".
 */
export function chainLines(run: ChainRun, now: number): ChainLine[] {
  const out: ChainLine[] = [];
  if (run.attempt > 0) {
    const max = run.autoResume?.maxAttempts ?? run.maxAttempts;
    const line: ChainLine = { key: 'attempt', text: `auto-resume ${run.attempt} of ${max}` };
    if (run.resumedFrom) line.link = { label: ' · resumed from ', run: run.resumedFrom };
    out.push(line);
  }
  const ar = run.autoResume;
  if (!ar) return out;
  switch (ar.outcome) {
    case 'PENDING': {
      const left = ar.dueAt ? (Date.parse(ar.dueAt) - now) / 1000 : 0;
      out.push({ key: 'PENDING', text: left > 0.5 ? `auto-resume due in ${seconds(left)}` : 'auto-resume due now', color: 'blue' });
      break;
    }
    case 'RESUMED':
      out.push({ key: 'RESUMED', text: '', link: { label: 'resumed by ', run: ar.resumedBy ?? '?' }, color: 'teal' });
      break;
    case 'EXHAUSTED':
      out.push({ key: 'EXHAUSTED', text: `gave up after ${plural(run.attempt, 'attempt', 'attempts')}: resume it by hand once the cause is fixed`, color: 'red' });
      break;
    case 'SUPERSEDED':
      out.push({ key: 'SUPERSEDED', text: 'not resumed: a later run of the job started first' });
      break;
    case 'OFF':
      out.push({ key: 'OFF', text: 'not resumed: policy off' });
      break;
  }
  return out;
}
