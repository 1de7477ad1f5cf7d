import { Badge, Tooltip } from '@mantine/core';

import type { LedgerState, ReplayStatus, RiskLevel, RunStatus, RunTrigger, Verdict } from '../gql/graphql';
import { ledgerStateMeta, replayStatusMeta, riskMeta, runStatusMeta, triggerMeta, verdictMeta, type Meta } from '../model/status';

function MetaBadge({ meta, testid, value }: { meta: Meta; testid?: string; value: string }) {
  return (
    <Tooltip label={meta.description} multiline maw={300} withArrow openDelay={300}>
      <Badge color={meta.color} variant="light" data-testid={testid} data-value={value} style={{ cursor: 'default', flexShrink: 0, minWidth: 'max-content' }}>
        {meta.label}
      </Badge>
    </Tooltip>
  );
}

export function RunStatusBadge({ status, testid = 'run-status' }: { status: RunStatus; testid?: string }) {
  return <MetaBadge meta={runStatusMeta(status)} testid={testid} value={status} />;
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
