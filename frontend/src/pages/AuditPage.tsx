// The audit log, newest first: every mutation with its actor, target, arguments and outcome.
import { Badge, Code, Group, Stack, Table, Text, Title, Tooltip } from '@mantine/core';
import { IconLock } from '@tabler/icons-react';
import { useQuery } from 'urql';

import { AuditLogQuery } from '../api/audit';
import { useRoleReason } from '../auth/AuthContext';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { DateTime } from '../components/Time';
import { useCursorPager } from '../hooks/useCursorPager';

/** outcomeColor colours an audit outcome: done (green), waiting (blue), refused (red), other refusals (orange). */
export function outcomeColor(outcome: string): string {
  const o = outcome.toUpperCase();
  if (['OK', 'APPROVED', 'EXECUTED', 'CONFIRMED', 'NOT_APPLIED'].includes(o)) return 'green';
  if (o === 'PENDING_APPROVAL') return 'blue';
  if (['FORBIDDEN', 'UNAUTHENTICATED', 'RATE_LIMITED', 'ERROR', 'BLOCKED'].includes(o)) return 'red';
  return 'orange';
}

function AuditTable() {
  const pager = useCursorPager();
  const [{ data, fetching, error }, refetch] = useQuery({ query: AuditLogQuery, variables: { first: 50, after: pager.after }, requestPolicy: 'cache-and-network' });
  const conn = data?.auditLog;
  return (
    <Stack>
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading lines={8} label="Loading the audit log" />}
      {conn && conn.nodes.length === 0 && <Empty title="Nothing audited yet" description="Every mutation is recorded here with its actor." />}
      {conn && conn.nodes.length > 0 && (
        <div className="table-wrap">
          <Table striped highlightOnHover miw={900} verticalSpacing={6} data-testid="audit-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>When</Table.Th>
                <Table.Th>Actor</Table.Th>
                <Table.Th>Action</Table.Th>
                <Table.Th>Target</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>Arguments</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {conn.nodes.map((e) => (
                <Table.Tr key={e.id}>
                  <Table.Td>
                    <DateTime iso={e.createdAt} size="sm" />
                  </Table.Td>
                  <Table.Td style={{ whiteSpace: 'nowrap' }}>
                    <Text size="sm" fw={600}>
                      {e.actor}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Code>{e.action}</Code>
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{e.target}</Text>
                  </Table.Td>
                  <Table.Td>
                    <Badge color={outcomeColor(e.outcome)} variant="light" style={{ minWidth: 'max-content' }}>
                      {e.outcome}
                    </Badge>
                  </Table.Td>
                  <Table.Td maw={360}>
                    <Tooltip label={<pre style={{ margin: 0 }}>{JSON.stringify(e.arguments, null, 2)}</pre>} multiline maw={480} withArrow>
                      <Text className="mono" lineClamp={2}>
                        {JSON.stringify(e.arguments)}
                      </Text>
                    </Tooltip>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="audit" />}
    </Stack>
  );
}

export function AuditPage() {
  const reason = useRoleReason('OPERATOR');
  return (
    <Stack>
      <Group justify="space-between">
        <div>
          <Title order={1} size="h2">
            Audit log
          </Title>
          <Text c="dimmed" size="sm">
            Every mutation, who asked and what came of it — refusals included.
          </Text>
        </div>
      </Group>
      {reason ? <Empty title="The audit log is for operators" description={reason} icon={<IconLock size={28} />} /> : <AuditTable />}
    </Stack>
  );
}
