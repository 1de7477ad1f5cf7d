// A run's failed items, in order: keyset pages, filtered by failure class.
import { Code, Group, Select, Stack, Table, Text } from '@mantine/core';
import { useEffect, useMemo, useState } from 'react';
import { useQuery } from 'urql';

import { RunErrorsQuery } from '../api/runs';
import { useCursorPager } from '../hooks/useCursorPager';
import { Pager } from './Pager';
import { TargetLink } from './TargetLink';
import { Empty, ErrorAlert, Loading } from './QueryState';
import { TimeAgo } from './Time';

const PAGE = 25;

export function RunErrors({ runId, refreshKey }: { runId: string; refreshKey: number }) {
  const pager = useCursorPager();
  const [cls, setCls] = useState<string | null>(null);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: RunErrorsQuery,
    variables: { id: runId, first: PAGE, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  useEffect(() => {
    if (refreshKey > 0) refetch({ requestPolicy: 'network-only' });
  }, [refreshKey, refetch]);
  const conn = data?.run?.errors;
  const classes = useMemo(() => [...new Set((conn?.nodes ?? []).map((e) => e.failureClass))].sort(), [conn]);
  const rows = (conn?.nodes ?? []).filter((e) => cls === null || e.failureClass === cls);

  return (
    <Stack gap="sm" data-testid="run-errors">
      <Group align="flex-end">
        <Select
          label="Failure class"
          placeholder="any class"
          data={classes}
          value={cls}
          onChange={setCls}
          clearable
          w={240}
          data-testid="errors-class-filter"
        />
        <Text size="xs" c="dimmed">
          The filter applies to the page shown.
        </Text>
      </Group>
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading label="Loading errors" />}
      {conn && rows.length === 0 && <Empty title="No errors" description={cls ? `No ${cls} errors on this page.` : 'No item of this run failed.'} />}
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
                <Table.Tr key={`${e.itemKey}-${e.attempt}-${i}`}>
                  <Table.Td>
                    {data?.run ? <TargetLink jobName={data.run.jobName} targetKey={e.itemKey} /> : <Code>{e.itemKey}</Code>}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" fw={600}>
                      {e.failureClass}
                    </Text>
                  </Table.Td>
                  <Table.Td>{e.attempt}</Table.Td>
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
