// A run's failed items, in order: keyset pages, filtered on the server by failure class and a
// search in the item key or message, so the filters cover every error row of the run.
import { Code, Group, Select, Stack, Table, Text, TextInput } from '@mantine/core';
import { IconSearch } from '@tabler/icons-react';
import { useEffect, useState } from 'react';
import { useQuery } from 'urql';

import { RunErrorsQuery } from '../api/runs';
import { useCursorPager } from '../hooks/useCursorPager';
import { useDebounced } from '../hooks/useDebounced';
import { ledgerStateMeta } from '../model/status';
import type { LedgerState } from '../gql/graphql';
import { Pager } from './Pager';
import { TargetLink } from './TargetLink';
import { Empty, ErrorAlert, Loading } from './QueryState';
import { TimeAgo } from './Time';

const PAGE = 25;

/** The failure classes an error row can have: the ledger states a final failure ends in. */
export const FAILURE_CLASSES: LedgerState[] = ['TRANSIENT', 'VALIDATION_REJECTED', 'CONFLICT', 'POLICY_BLOCKED', 'BUG_SUSPECTED', 'AMBIGUOUS_EFFECT'];

/** MAX_SEARCH is the server's bound on the search text, in characters. */
export const MAX_SEARCH = 200;

/** errorsSummary says how many error rows match, and of how many pages' worth. */
export function errorsSummary(total: number, filtered: boolean): string {
  const rows = `${total} error row${total === 1 ? '' : 's'}`;
  return filtered ? `${rows} match${total === 1 ? 'es' : ''} the filter (all pages)` : `${rows} in this run`;
}

export function RunErrors({ runId, refreshKey }: { runId: string; refreshKey: number }) {
  const pager = useCursorPager();
  const { reset } = pager;
  const [cls, setCls] = useState<string | null>(null);
  const [searchInput, setSearchInput] = useState('');
  const search = useDebounced(searchInput.trim(), 300);
  useEffect(() => reset(), [cls, search, reset]);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: RunErrorsQuery,
    variables: {
      id: runId,
      first: PAGE,
      after: pager.after,
      failureClass: cls,
      search: search || null,
    },
    requestPolicy: 'cache-and-network',
  });
  useEffect(() => {
    if (refreshKey > 0) refetch({ requestPolicy: 'network-only' });
  }, [refreshKey, refetch]);
  const conn = data?.run?.errors;
  const rows = conn?.nodes ?? [];
  const filtered = cls !== null || search !== '';

  return (
    <Stack gap="sm" data-testid="run-errors">
      <Group align="flex-end">
        <Select
          label="Failure class"
          placeholder="any class"
          data={FAILURE_CLASSES.map((c) => ({
            value: c,
            label: ledgerStateMeta(c).label,
          }))}
          value={cls}
          onChange={setCls}
          clearable
          w={220}
          data-testid="errors-class-filter"
        />
        <TextInput
          label="Search"
          placeholder="item key or message"
          leftSection={<IconSearch size={14} />}
          value={searchInput}
          onChange={(e) => setSearchInput(e.currentTarget.value)}
          maxLength={MAX_SEARCH}
          w={240}
          data-testid="errors-search"
        />
        {conn && (
          <Text size="xs" c="dimmed" data-testid="errors-total" data-total={conn.totalCount}>
            {errorsSummary(conn.totalCount, filtered)}
          </Text>
        )}
      </Group>
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading label="Loading errors" />}
      {conn && rows.length === 0 && (
        <Empty title="No errors" description={filtered ? 'No error row of this run matches the filter.' : 'No item of this run failed.'} />
      )}
      {rows.length > 0 && (
        <div className="table-wrap">
          <Table striped miw={720} verticalSpacing={6}>
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Item</Table.Th>
                <Table.Th>Class</Table.Th>
                <Table.Th>Attempt</Table.Th>
                <Table.Th>Message</Table.Th>
                <Table.Th>When</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((e, i) => (
                <Table.Tr key={`${e.itemKey}-${e.attempt}-${i}`} data-testid="error-row">
                  <Table.Td>
                    {data?.run ? <TargetLink jobName={data.run.jobName} targetKey={e.itemKey} /> : <Code>{e.itemKey}</Code>}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" fw={600}>
                      {e.failureClass}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    {e.attempt > 0 ? (
                      e.attempt
                    ) : (
                      <Text span size="sm" c="dimmed" title="Refused before any call was made">
                        no call
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td maw={420}>
                    <Text size="xs" c="red" lineClamp={3} title={e.message}>
                      {e.message}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <TimeAgo iso={e.createdAt} size="sm" />
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="errors" />}
    </Stack>
  );
}
