// A job's runs, newest first: filter by status, keyset pages; refreshed on run lifecycle events.
import { Anchor, Chip, Group, Stack, Table, Text } from '@mantine/core';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';

import { JobRunsQuery } from '../api/jobs';
import { runNumber, runPath, type RunSummary } from '../api/runs';
import type { RunStatus } from '../gql/graphql';
import { useCursorPager } from '../hooks/useCursorPager';
import { attentionWords, isActive, needsAttention, runStatusMeta, triggerLabel } from '../model/status';
import { formatDuration, formatNumber } from '../model/time';
import { RunStatusBadge } from './Badges';
import { Pager } from './Pager';
import { Empty, ErrorAlert, Loading } from './QueryState';
import { TimeAgo } from './Time';

const STATUSES: RunStatus[] = ['STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'PAUSED'];
const PAGE = 10;

type RowRun = Pick<RunSummary, 'status' | 'trigger' | 'attempt' | 'mode' | 'startedAt' | 'finishedAt' | 'progress' | 'needsAttention' | 'attention'>;

/** RunTriggerText is a run row's trigger, its auto-resume attempt and its mode. */
export function RunTriggerText({ run: r }: { run: RowRun }) {
  return (
    <Text size="sm">
      {triggerLabel(r.trigger)}
      {r.attempt > 0 ? ` ${r.attempt}` : ''} · {r.mode.toLowerCase()}
    </Text>
  );
}

/** RunDurationText is a run row's wall time, or "running". */
export function RunDurationText({ run: r }: { run: RowRun }) {
  return <Text size="sm">{r.finishedAt ? formatDuration(Date.parse(r.finishedAt) - Date.parse(r.startedAt)) : 'running'}</Text>;
}

/** RunProcessedText is a run row's processed items, with what of them needs attention. */
export function RunProcessedText({ run: r }: { run: RowRun }) {
  return (
    <Text size="sm">
      {formatNumber(r.progress.processed)}
      {r.progress.total !== null && r.progress.total !== undefined ? ` / ${formatNumber(r.progress.total)}` : ''}
      {needsAttention(r) && (
        <Text span c="orange.8" size="sm" fw={600} data-testid="run-row-attention">
          {' '}
          ({attentionWords(r.attention)})
        </Text>
      )}
    </Text>
  );
}

export function RunsTable({ jobName, refreshKey }: { jobName: string; refreshKey: number }) {
  const [statuses, setStatuses] = useState<RunStatus[]>([]);
  const pager = useCursorPager();
  const { reset } = pager;
  useEffect(() => reset(), [statuses, reset]);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: JobRunsQuery,
    variables: { name: jobName, status: statuses.length ? statuses : null, first: PAGE, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  useEffect(() => {
    if (refreshKey > 0) refetch({ requestPolicy: 'network-only' });
  }, [refreshKey, refetch]);
  const conn = data?.job?.runs;
  // An active run's counts change without a lifecycle event: re-read while one is listed, so
  // the table keeps up with the run page.
  const anyActive = (conn?.nodes ?? []).some((r) => isActive(r.status));
  useEffect(() => {
    if (!anyActive) return;
    const t = window.setInterval(() => refetch({ requestPolicy: 'network-only' }), 5_000);
    return () => window.clearInterval(t);
  }, [anyActive, refetch]);

  return (
    <Stack gap="sm" data-testid="runs-table">
      <Chip.Group multiple value={statuses} onChange={(v) => setStatuses(v as RunStatus[])}>
        <Group gap={6} role="group" aria-label="Filter runs by status">
          {STATUSES.map((s) => (
            <Chip key={s} value={s} size="xs" color={runStatusMeta(s).color} wrapperProps={{ 'data-testid': `runs-filter-${s}` }}>
              {runStatusMeta(s).label}
            </Chip>
          ))}
        </Group>
      </Chip.Group>
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading label="Loading runs" />}
      {conn && conn.nodes.length === 0 && <Empty title="No runs" description={statuses.length ? 'No run has these statuses.' : 'This job has not run yet.'} />}
      {conn && conn.nodes.length > 0 && (
        <div className="table-wrap">
          <Table striped highlightOnHover miw={760} verticalSpacing={6}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Run</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Trigger</Table.Th>
                <Table.Th>By</Table.Th>
                <Table.Th>Started</Table.Th>
                <Table.Th>Duration</Table.Th>
                <Table.Th>Processed</Table.Th>
                <Table.Th>Message</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {conn.nodes.map((r) => (
                <Table.Tr key={r.id} data-testid="run-row">
                  <Table.Td>
                    <Anchor component={Link} to={runPath(r.id)}>
                      #{runNumber(r.id)}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <RunStatusBadge status={r.status} needsAttention={r.needsAttention} attention={r.attention} testid="run-row-status" />
                  </Table.Td>
                  <Table.Td>
                    <RunTriggerText run={r} />
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{r.requestedBy}</Text>
                  </Table.Td>
                  <Table.Td>
                    <TimeAgo iso={r.startedAt} size="sm" />
                  </Table.Td>
                  <Table.Td>
                    <RunDurationText run={r} />
                  </Table.Td>
                  <Table.Td>
                    <RunProcessedText run={r} />
                  </Table.Td>
                  <Table.Td maw={260}>
                    <Text size="xs" c="dimmed" lineClamp={1} title={r.message}>
                      {r.message || '—'}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="runs" />}
    </Stack>
  );
}
