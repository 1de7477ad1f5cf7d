// A replay preflight: every number, every check with its verdict, and — in plain words — what
// blocks the replay and why it needs approval.
import { Alert, Group, List, SimpleGrid, Stack, Table, Text } from '@mantine/core';
import { IconAlertTriangle, IconBan, IconCircleCheck } from '@tabler/icons-react';

import type { PreflightFieldsFragment } from '../gql/graphql';
import { ledgerStateMeta, riskMeta } from '../model/status';
import { formatNumber, formatPercent, formatSeconds } from '../model/time';
import { VerdictBadge } from './Badges';
import { DateTime } from './Time';

/** checkValue renders a check's value and threshold: rates as percentages, the rest as numbers. */
export function checkValue(name: string, v: number, threshold = false): string {
  if (threshold && v === 0 && /age/i.test(name)) return '—';
  if (/rate|error/i.test(name) && v <= 1 && !Number.isInteger(v)) return formatPercent(v * 100);
  if (/age/i.test(name)) return formatSeconds(v);
  return Number.isInteger(v) ? formatNumber(v) : v.toFixed(2);
}

function Num({ label, value, color, testid }: { label: string; value: string; color?: string; testid?: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text fw={700} c={color} data-testid={testid}>
        {value}
      </Text>
    </div>
  );
}

export function PreflightPanel({ pf }: { pf: PreflightFieldsFragment }) {
  const failed = pf.failedByClass.reduce((n, c) => n + c.count, 0);
  return (
    <Stack gap="md" data-testid="preflight" data-blocked={pf.blocked} data-requires-approval={pf.requiresApproval}>
      {pf.blocked ? (
        <Alert color="red" variant="light" icon={<IconBan />} title="This replay is blocked" data-testid="preflight-blocked">
          <List size="sm" spacing={4}>
            {pf.blockingReasons.map((r) => (
              <List.Item key={r} data-testid="blocking-reason">
                {r}
              </List.Item>
            ))}
          </List>
        </Alert>
      ) : pf.requiresApproval ? (
        <Alert color="yellow" variant="light" icon={<IconAlertTriangle />} title="A second person must approve this replay" data-testid="preflight-approval">
          <List size="sm" spacing={4}>
            {pf.approvalReasons.map((r) => (
              <List.Item key={r}>{r}</List.Item>
            ))}
          </List>
        </Alert>
      ) : (
        <Alert color="green" variant="light" icon={<IconCircleCheck />} title="Nothing blocks this replay" data-testid="preflight-ok">
          It runs as soon as it is requested.
        </Alert>
      )}

      <SimpleGrid cols={{ base: 2, sm: 4, lg: 6 }} spacing="sm">
        <Num label="In scope" value={formatNumber(pf.targetsInScope)} testid="pf-in-scope" />
        <Num label="Confirmed" value={formatNumber(pf.confirmed)} color="green" />
        <Num label="Failed" value={formatNumber(failed)} color={failed ? 'red' : undefined} />
        <Num label="Ambiguous" value={formatNumber(pf.ambiguous)} color={pf.ambiguous ? 'grape' : undefined} testid="pf-ambiguous" />
        <Num label="In flight" value={formatNumber(pf.inFlight)} />
        <Num label="Fix queue" value={formatNumber(pf.fixQueue)} color={pf.fixQueue ? 'orange' : undefined} />
        <Num label="Downstream errors" value={`${formatPercent(pf.downstreamErrorRate * 100)} of ${formatNumber(pf.downstreamCalls)}`} />
        <Num label="Checkpoint age" value={pf.lastCheckpointAgeSeconds === null || pf.lastCheckpointAgeSeconds === undefined ? '—' : formatSeconds(pf.lastCheckpointAgeSeconds)} />
        <Num label="Job version" value={pf.jobVersionChanged ? `${pf.runJobVersion} → ${pf.currentJobVersion}` : pf.currentJobVersion} color={pf.jobVersionChanged ? 'orange' : undefined} />
        <Num label="Risk" value={riskMeta(pf.riskLevel).label} color={riskMeta(pf.riskLevel).color} />
        <Num label="Generation" value={String(pf.generation)} />
        <Num label="Scope" value={pf.scope} />
      </SimpleGrid>

      {pf.failedByClass.length > 0 && (
        <Group gap="md">
          <Text size="sm" c="dimmed">
            Failed by class:
          </Text>
          {pf.failedByClass.map((c) => (
            <Text size="sm" key={c.state}>
              {ledgerStateMeta(c.state).label} <b>{formatNumber(c.count)}</b>
            </Text>
          ))}
        </Group>
      )}

      <div className="table-wrap">
        <Table miw={640} verticalSpacing={6} data-testid="preflight-checks">
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Check</Table.Th>
              <Table.Th>Value</Table.Th>
              <Table.Th>Threshold</Table.Th>
              <Table.Th>Verdict</Table.Th>
              <Table.Th>Detail</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {pf.checks.map((c) => (
              <Table.Tr key={c.name} data-verdict={c.verdict}>
                <Table.Td>
                  <Text size="sm" fw={600}>
                    {c.name}
                  </Text>
                </Table.Td>
                <Table.Td>{checkValue(c.name, c.value)}</Table.Td>
                <Table.Td>{checkValue(c.name, c.threshold, true)}</Table.Td>
                <Table.Td style={{ whiteSpace: 'nowrap' }}>
                  <VerdictBadge verdict={c.verdict} />
                </Table.Td>
                <Table.Td>
                  <Text size="sm">{c.detail}</Text>
                </Table.Td>
              </Table.Tr>
            ))}
          </Table.Tbody>
        </Table>
      </div>
      <Text size="xs" c="dimmed">
        Computed <DateTime iso={pf.computedAt} size="xs" />
      </Text>
    </Stack>
  );
}
