// How the API's enums look and read in the console: colours, labels, plain-word meanings.
import type {
  AlertKind,
  LedgerState,
  ReplayStatus,
  RiskLevel,
  Role,
  RunStatus,
  RunTrigger,
  ShardStatus,
  StopReason,
  Verdict,
} from '../gql/graphql';

/** What the console shows for an enum value. */
export interface Meta {
  label: string;
  color: string;
  /** One sentence an operator understands without the docs. */
  description: string;
}

export interface RunStatusMeta extends Meta {
  /** The run holds (or is acquiring) a lease and may still change. */
  active: boolean;
}

const RUN_STATUS: Record<RunStatus, RunStatusMeta> = {
  PENDING: { label: 'Pending', color: 'violet', active: false, description: 'A shard waiting for an instance with a free slot.' },
  STARTING: { label: 'Starting', color: 'blue', active: true, description: 'The run was requested and is acquiring its lease.' },
  RUNNING: { label: 'Running', color: 'cyan', active: true, description: 'The run is processing items.' },
  SUCCEEDED: { label: 'Succeeded', color: 'green', active: false, description: 'The run processed every item.' },
  FAILED: { label: 'Failed', color: 'red', active: false, description: 'The run stopped on an error or a stop condition.' },
  CANCELLED: { label: 'Cancelled', color: 'gray', active: false, description: 'Someone cancelled the run; committed items stay.' },
  PAUSED: { label: 'Paused', color: 'yellow', active: false, description: 'The run stopped for a pause or maintenance; a RESUME run continues it.' },
};

/** runStatusMeta maps a run status to its label, colour and whether the run is active. */
export function runStatusMeta(status: RunStatus): RunStatusMeta {
  return RUN_STATUS[status];
}

const SHARD_STATUS: Record<ShardStatus, Meta> = {
  PENDING: { label: 'Pending', color: 'violet', description: 'Waiting for an instance with a free slot.' },
  STARTING: { label: 'Claimed', color: 'blue', description: 'An instance claimed the shard and is starting it.' },
  RUNNING: { label: 'Running', color: 'cyan', description: 'An instance is working the shard.' },
  SUCCEEDED: { label: 'Done', color: 'green', description: 'The shard processed every item of its part.' },
  FAILED: { label: 'Failed', color: 'red', description: 'The shard stopped on an error or a stop condition.' },
  CANCELLED: { label: 'Cancelled', color: 'gray', description: 'The run was cancelled before the shard finished.' },
  PAUSED: { label: 'Paused', color: 'yellow', description: 'The run was paused; a RESUME run continues the shard from its checkpoint.' },
};

/** shardStatusMeta maps a shard's status to its label and colour. */
export function shardStatusMeta(status: ShardStatus): Meta {
  return SHARD_STATUS[status];
}

/** The items of a run that need a person, as Run.attention gives them. */
export interface Attention {
  failed: number;
  rejected: number;
  ambiguous: number;
}

/** The part of a run its outcome is read from. */
export interface OutcomeLike {
  status: RunStatus;
  needsAttention?: boolean | null;
  attention?: Attention | null;
}

/** attentionTotal is how many items of a run need a person. */
export function attentionTotal(a: Attention | null | undefined): number {
  return a ? a.failed + a.rejected + a.ambiguous : 0;
}

/** needsAttention reports whether a run has items that failed, were rejected or are still ambiguous. */
export function needsAttention(run: OutcomeLike): boolean {
  return Boolean(run.needsAttention) || attentionTotal(run.attention) > 0;
}

/** succeededCleanly is the one honest "all good": SUCCEEDED with nothing to attend to. */
export function succeededCleanly(run: OutcomeLike): boolean {
  return run.status === 'SUCCEEDED' && !needsAttention(run);
}

/** attentionWords says what needs a person: "35 failed · 3 ambiguous"; "" when nothing does. */
export function attentionWords(a: Attention | null | undefined): string {
  if (!a) return '';
  const parts: string[] = [];
  if (a.failed > 0) parts.push(`${a.failed} failed`);
  if (a.rejected > 0) parts.push(`${a.rejected} rejected`);
  if (a.ambiguous > 0) parts.push(`${a.ambiguous} ambiguous`);
  return parts.join(' · ');
}

/**
 * runOutcomeMeta is what a run's chip shows: its status, except that a SUCCEEDED run whose
 * items need attention is never drawn green ("Succeeded · needs attention", orange).
 */
export function runOutcomeMeta(run: OutcomeLike): RunStatusMeta {
  const meta = RUN_STATUS[run.status];
  if (run.status !== 'SUCCEEDED' || !needsAttention(run)) return meta;
  const what = attentionWords(run.attention);
  return {
    ...meta,
    label: 'Succeeded · needs attention',
    color: 'orange',
    description: `The job finished, but items need a person${what ? `: ${what}` : ''}. See the errors and the ledger.`,
  };
}

/** isActive reports whether a run in this status may still change. */
export function isActive(status: RunStatus): boolean {
  return RUN_STATUS[status].active;
}

const LEDGER_STATE: Record<LedgerState, Meta> = {
  IN_FLIGHT: { label: 'In flight', color: 'blue', description: 'An attempt started and has no outcome yet.' },
  CONFIRMED: { label: 'Confirmed', color: 'green', description: 'The effect happened and was recorded.' },
  TRANSIENT: { label: 'Transient', color: 'orange', description: 'A passing failure; nothing was applied, safe to retry.' },
  VALIDATION_REJECTED: { label: 'Rejected', color: 'red', description: 'The other side refused the input as invalid.' },
  CONFLICT: { label: 'Conflict', color: 'red', description: 'The other side reported a conflicting state.' },
  AMBIGUOUS_EFFECT: { label: 'Ambiguous', color: 'grape', description: 'Unknown whether the effect happened: reconcile before retrying.' },
  POLICY_BLOCKED: { label: 'Policy blocked', color: 'pink', description: 'A policy stopped this target.' },
  BUG_SUSPECTED: { label: 'Bug suspected', color: 'red', description: 'The target failed the same way repeatedly: it needs a fix, not a retry.' },
  NOT_APPLIED: { label: 'Not applied', color: 'teal', description: 'Confirmed that the effect did not happen: safe to retry.' },
  SKIPPED: { label: 'Skipped', color: 'gray', description: 'The job skipped this target.' },
};

/** LEDGER_STATES lists every ledger state in display order. */
export const LEDGER_STATES: LedgerState[] = Object.keys(LEDGER_STATE) as LedgerState[];

export function ledgerStateMeta(state: LedgerState): Meta {
  return LEDGER_STATE[state];
}

const VERDICT: Record<Verdict, Meta> = {
  OK: { label: 'OK', color: 'green', description: 'Within limits.' },
  WARN: { label: 'Warning', color: 'yellow', description: 'Allowed, but read the detail.' },
  BLOCK: { label: 'Blocks', color: 'red', description: 'The replay cannot go ahead while this holds.' },
};

export function verdictMeta(v: Verdict): Meta {
  return VERDICT[v];
}

const REPLAY_STATUS: Record<ReplayStatus, Meta> = {
  PENDING_APPROVAL: { label: 'Pending approval', color: 'yellow', description: 'Waiting for a second person (an approver) to decide.' },
  APPROVED: { label: 'Approved', color: 'blue', description: 'Approved; its run is about to start.' },
  REJECTED: { label: 'Rejected', color: 'gray', description: 'An approver rejected the request.' },
  BLOCKED: { label: 'Blocked', color: 'red', description: 'The preflight blocked the replay.' },
  EXECUTED: { label: 'Executed', color: 'green', description: 'The replay run was started.' },
};

export function replayStatusMeta(s: ReplayStatus): Meta {
  return REPLAY_STATUS[s];
}

const RISK: Record<RiskLevel, Meta> = {
  LOW: { label: 'Low risk', color: 'gray', description: 'Replays run without approval.' },
  MEDIUM: { label: 'Medium risk', color: 'yellow', description: 'Replays deserve a careful look at the preflight.' },
  HIGH: { label: 'High risk', color: 'red', description: 'Money, permissions or external sends: replays need a compensation reference and a second person.' },
};

export function riskMeta(r: RiskLevel): Meta {
  return RISK[r];
}

const TRIGGER: Record<RunTrigger, Meta> = {
  SCHEDULED: { label: 'Scheduled', color: 'gray', description: 'Started by the job’s schedule.' },
  MANUAL: { label: 'Manual', color: 'gray', description: 'Started by a person (the console, the CLI or the API).' },
  REPLAY: { label: 'Replay', color: 'indigo', description: 'Started by an approved replay request.' },
  RECONCILE: { label: 'Reconcile', color: 'indigo', description: 'Started to settle a target whose effect is in doubt.' },
  AUTO_RESUME: {
    label: 'Auto-resume',
    color: 'violet',
    description: 'Started by the cluster itself: it continues a run whose holder died, whose instance shut down or whose database went away.',
  },
};

export function triggerLabel(t: RunTrigger): string {
  return TRIGGER[t].label;
}

export function triggerMeta(t: RunTrigger): Meta {
  return TRIGGER[t];
}

const STOP_REASON: Record<StopReason, string> = {
  CANCELLED: 'cancelled by an operator',
  PAUSED: 'the job was paused',
  MAINTENANCE: 'cluster maintenance',
  SHUTDOWN: 'the instance shut down',
  LEASE_EXPIRED: 'its lease expired (the worker stopped renewing it)',
  ERROR: 'an error',
  PANIC: 'a panic in the job code',
  STOP_CONDITION: 'a stop condition tripped',
  SHUTDOWN_TIMEOUT: 'the instance shut down before the item finished',
  DATABASE_UNAVAILABLE: 'the database went away (a restart or a failover)',
};

/** stopReasonWords says why a run stopped: "cluster maintenance". */
export function stopReasonWords(r: StopReason): string {
  return STOP_REASON[r];
}

const ALERT_KIND: Record<AlertKind, string> = {
  HEARTBEAT_MISSED: 'Heartbeat missed',
  CHECKPOINT_STALLED: 'Checkpoint stalled',
  TARGET_RETRIED: 'Target retried repeatedly',
  DOWNSTREAM_ERRORS: 'Downstream errors',
  NO_LEDGER_WRITES: 'No ledger writes',
  AMBIGUOUS_EFFECT: 'Ambiguous effect',
  AUTO_RESUME_EXHAUSTED: 'Auto-resume gave up',
  DOWNSTREAM_LIMIT_DEGRADED: 'Downstream limit on local share',
  SCHEDULED_FIRE_BLOCKED: 'Scheduled RESTART blocked',
};

export function alertKindLabel(k: AlertKind): string {
  return ALERT_KIND[k];
}

/** severityColor colours an alert's severity (WARNING, CRITICAL). */
export function severityColor(severity: string): string {
  return severity.toUpperCase() === 'CRITICAL' ? 'red' : 'orange';
}

const ROLE_ORDER: Record<Role, number> = { VIEWER: 0, OPERATOR: 1, APPROVER: 2, ADMIN: 3 };

/** roleAtLeast reports whether role may do what needed may (VIEWER < OPERATOR < APPROVER < ADMIN). */
export function roleAtLeast(role: Role, needed: Role): boolean {
  return ROLE_ORDER[role] >= ROLE_ORDER[needed];
}

/** roleLabel: "operator". */
export function roleLabel(role: Role): string {
  return role.toLowerCase();
}

/** roleReason is why a role may not do something: "Needs the operator role; you are a viewer." */
export function roleReason(role: Role, needed: Role): string | null {
  if (roleAtLeast(role, needed)) return null;
  const article = (r: Role): string => (r === 'OPERATOR' || r === 'APPROVER' || r === 'ADMIN' ? 'an' : 'a');
  return `Needs the ${roleLabel(needed)} role; you are ${article(role)} ${roleLabel(role)}.`;
}

/** alertTitle names an alarm in a line: its kind, and the job it concerns when it concerns one. */
export function alertTitle(a: { kind: AlertKind; jobName: string }): string {
  return a.jobName ? `${alertKindLabel(a.kind)} — ${a.jobName}` : alertKindLabel(a.kind);
}
