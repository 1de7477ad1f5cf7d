import { Badge, Tooltip } from '@mantine/core';

import type { LedgerState, ReplayStatus, RiskLevel, RunStatus, RunTrigger, Verdict } from '../gql/graphql';
import { ledgerStateMeta, needsAttention, replayStatusMeta, riskMeta, runOutcomeMeta, triggerMeta, verdictMeta, type Attention, type Meta } from '../model/status';

function MetaBadge({ meta, testid, value, attention }: { meta: Meta; testid?: string; value: string; attention?: boolean }) {
  return (
    <Tooltip label={meta.description} multiline maw={300} withArrow openDelay={300}>
      <Badge
        color={meta.color}
        variant="light"
        data-testid={testid}
        data-value={value}
        data-attention={attention === undefined ? undefined : String(attention)}
        style={{ cursor: 'default', flexShrink: 0, minWidth: 'max-content' }}
      >
        {meta.label}
      </Badge>
    </Tooltip>
  );
}

/**
 * RunStatusBadge is a run's chip. Given the run's attention it tells the outcome, not only the
 * status: a SUCCEEDED run with failed, rejected or ambiguous items is not green.
 */
export function RunStatusBadge({
  status,
  needsAttention: flag,
  attention,
  testid = 'run-status',
}: {
  status: RunStatus;
  needsAttention?: boolean | null;
  attention?: Attention | null;
  testid?: string;
}) {
  const run = { status, needsAttention: flag, attention };
  return <MetaBadge meta={runOutcomeMeta(run)} testid={testid} value={status} attention={needsAttention(run)} />;
}

export function LedgerStateBadge({ state }: { state: LedgerState }) {
  return <MetaBadge meta={ledgerStateMeta(state)} value={state} />;
}

export function VerdictBadge({ verdict }: { verdict: Verdict }) {
  return <MetaBadge meta={verdictMeta(verdict)} value={verdict} testid="verdict" />;
}

export function ReplayStatusBadge({ status }: { status: ReplayStatus }) {
  return <MetaBadge meta={replayStatusMeta(status)} value={status} testid="replay-status" />;
}

export function RiskBadge({ risk }: { risk: RiskLevel }) {
  return <MetaBadge meta={riskMeta(risk)} value={risk} testid="risk" />;
}

export function TriggerBadge({ trigger }: { trigger: RunTrigger }) {
  return <MetaBadge meta={triggerMeta(trigger)} value={trigger} testid="run-trigger" />;
}
