// The ledger of a job (optionally of one run): filter by state, search by target key prefix,
// keyset pages.
import { Anchor, Button, Checkbox, Group, MultiSelect, Stack, Table, Text, TextInput } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { useQuery } from 'urql';

import { attemptText, LedgerQuery } from '../api/ledger';
import { replayTargetsPath } from '../api/replays';
import { runNumber, runPath } from '../api/runs';
import type { LedgerState } from '../gql/graphql';
import { useCursorPager } from '../hooks/useCursorPager';
import { useDebounced } from '../hooks/useDebounced';
import { LEDGER_STATES, ledgerStateMeta } from '../model/status';
import { LedgerStateBadge } from './Badges';
import { Pager } from './Pager';
import { TargetLink } from './TargetLink';
import { Empty, ErrorAlert, Loading } from './QueryState';
import { TimeAgo } from './Time';

const PAGE = 20;

/**
 * LedgerTable lists a job's ledger, or one run's (runId). A run's ledger can select targets
 * and replay only those, through the replay page's preflight and approval.
 */
export function LedgerTable({ jobName, runId, initialStates = [] }: { jobName: string; runId?: string; initialStates?: LedgerState[] }) {
  const [states, setStates] = useState<LedgerState[]>(initialStates);
  const [selected, setSelected] = useState<string[]>([]);
  const toggle = (key: string) => setSelected((s) => (s.includes(key) ? s.filter((k) => k !== key) : [...s, key]));
  const [search, setSearch] = useState('');
  const prefix = useDebounced(search.trim(), 300);
  const pager = useCursorPager();
  const { reset } = pager;
  useEffect(() => reset(), [states, prefix, reset]);

  const [{ data, fetching, error }, refetch] = useQuery({
    query: LedgerQuery,
    variables: {
      jobName,
      runId: runId ?? null,
      state: states.length > 0 ? states : null,
      targetPrefix: prefix || null,
      first: PAGE,
      after: pager.after,
    },
    requestPolicy: 'cache-and-network',
  });
  const conn = data?.ledger;

  return (
    <Stack gap="sm" data-testid="ledger-table">
      <Group align="flex-end">
        <MultiSelect
          label="State"
          placeholder={states.length ? undefined : 'any state'}
          data={LEDGER_STATES.map((s) => ({ value: s, label: ledgerStateMeta(s).label }))}
          value={states}
          onChange={(v) => setStates(v as LedgerState[])}
          clearable
          w={320}
          data-testid="ledger-state-filter"
        />
        <TextInput
          label="Target key starts with"
          placeholder="e.g. acct:00"
          leftSection={<IconSearch size={14} />}
          value={search}
          onChange={(e) => setSearch(e.currentTarget.value)}
          w={240}
          data-testid="ledger-search"
        />
        {runId && (
          <Group gap="xs" data-testid="ledger-replay-selected">
            <Text size="sm">{selected.length} selected</Text>
            {selected.length > 0 ? (
              <Button component={Link} to={replayTargetsPath(runPath(runId), selected)} size="xs" variant="light" data-testid="replay-selected">
                Replay selected…
              </Button>
            ) : (
              <Button size="xs" variant="light" disabled title="Select targets first">
                Replay selected…
              </Button>
            )}
          </Group>
        )}
      </Group>
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading label="Loading the ledger" />}
      {conn && conn.nodes.length === 0 && (
        <Empty title="No ledger entries" description={states.length || prefix ? 'Nothing matches these filters.' : 'Nothing was recorded yet.'} />
      )}
      {conn && conn.nodes.length > 0 && (
        <div className="table-wrap">
          <Table striped highlightOnHover miw={900} verticalSpacing={6}>
            <Table.Thead>
              <Table.Tr>
                {runId && <Table.Th aria-label="Select" />}
                <Table.Th>Target</Table.Th>
                <Table.Th>Step</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>Attempt</Table.Th>
                <Table.Th>Effect / evidence</Table.Th>
                <Table.Th>Last error</Table.Th>
                <Table.Th>Run</Table.Th>
                <Table.Th>Updated</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {conn.nodes.map((e) => (
                <Table.Tr key={e.id} data-testid="ledger-row">
                  {runId && (
                    <Table.Td>
                      <Checkbox aria-label={`Select ${e.targetKey}`} checked={selected.includes(e.targetKey)} onChange={() => toggle(e.targetKey)} data-testid="ledger-select" />
                    </Table.Td>
                  )}
                  <Table.Td>
                    <TargetLink jobName={e.jobName} targetKey={e.targetKey} hint={`Idempotency key ${e.idempotencyKey}: open the target's history`} />
                    {e.inputChanged && (
                      <Text size="xs" c="orange">
                        input changed
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{e.step || '—'}</Text>
                    {e.external && (
                      <Text size="xs" c="dimmed">
                        external
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <LedgerStateBadge state={e.state} />
                  </Table.Td>
                  <Table.Td>{attemptText(e.attempt)}</Table.Td>
                  <Table.Td>
                    <Text className="mono">{e.effectRef ?? '—'}</Text>
                    {e.evidenceRef && <Text className="mono" c="dimmed">{e.evidenceRef}</Text>}
                  </Table.Td>
                  <Table.Td maw={280}>
                    <Text size="xs" c={e.lastError ? 'red' : 'dimmed'} lineClamp={2} title={e.lastError ?? undefined}>
                      {e.lastError ?? '—'}
                      {e.sameErrorCount > 1 ? ` (×${e.sameErrorCount})` : ''}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Anchor component={Link} to={runPath(e.run.id)} size="sm">
                      #{runNumber(e.run.id)}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <TimeAgo iso={e.updatedAt} size="sm" />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="ledger" />}
    </Stack>
  );
}

/** LedgerSummary shows per-state counts as badges. */
export function LedgerSummary({ summary }: { summary: ReadonlyArray<{ state: LedgerState; count: number }> }) {
  if (summary.length === 0) {
    return (
      <Text size="sm" c="dimmed">
        No ledger entries yet.
      </Text>
    );
  }
  return (
    <Group gap="xs" data-testid="ledger-summary">
      {summary.map((c) => (
        <Group key={c.state} gap={4} wrap="nowrap">
          <LedgerStateBadge state={c.state} />
          <Text size="sm" fw={600}>
            {c.count.toLocaleString('en-US')}
          </Text>
        </Group>
      ))}
    </Group>
  );
}
