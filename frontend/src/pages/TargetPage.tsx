// One ledger target's history across runs and generations: each generation's entry (state,
// attempts, idempotency key, effect and evidence refs) and every error its runs met.
import { Anchor, Card, Code, Group, Stack, Table, Text, Title } from '@mantine/core';
import { Link, useLocation, useParams } from 'react-router';
import { useQuery } from 'urql';

import { attemptText, TargetQuery } from '../api/ledger';
import { jobPath, runNumber, runPath } from '../api/runs';
import { LedgerStateBadge, RiskBadge } from '../components/Badges';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { TimeAgo } from '../components/Time';
import { useCursorPager } from '../hooks/useCursorPager';

const PAGE = 20;

/**
 * targetKeyOf reads the target key from a target page's path (/admin/jobs/:name/targets/<key>),
 * decoding it once: the key may hold any characters, slashes included.
 */
export function targetKeyOf(pathname: string): string {
  const i = pathname.indexOf('/targets/');
  if (i < 0) return '';
  try {
    return decodeURIComponent(pathname.slice(i + '/targets/'.length));
  } catch {
    return pathname.slice(i + '/targets/'.length);
  }
}

export function TargetPage() {
  const jobName = useParams()['name'] ?? '';
  const targetKey = targetKeyOf(useLocation().pathname);
  const entriesPager = useCursorPager();
  const errorsPager = useCursorPager();
  const [{ data, fetching, error }, refetch] = useQuery({
    query: TargetQuery,
    variables: { jobName, targetKey, first: PAGE, after: entriesPager.after, errorsAfter: errorsPager.after },
    requestPolicy: 'cache-and-network',
  });
  if (error && !data) return <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />;
  if (fetching && !data) return <Loading lines={6} label="Loading the target's history" />;
  const t = data?.target;
  if (!t) {
    return (
      <Empty
        title="No such target"
        description={
          <>
            Job <Code>{jobName}</Code> has no ledger entry and no error for target <Code>{targetKey}</Code>.{' '}
            <Anchor component={Link} to={jobPath(jobName)}>
              Back to the job
            </Anchor>
          </>
        }
      />
    );
  }
  return (
    <Stack data-testid="target-page">
      <div>
        <Text size="sm">
          <Anchor component={Link} to="/admin">
            Jobs
          </Anchor>{' '}
          /{' '}
          <Anchor component={Link} to={jobPath(t.jobName)}>
            {t.jobName}
          </Anchor>{' '}
          / target
        </Text>
        <Group gap="sm" wrap="wrap">
          <Title order={1} size="h2" style={{ overflowWrap: 'anywhere' }} data-testid="target-key">
            {t.targetKey}
          </Title>
          {t.job && <RiskBadge risk={t.job.riskLevel} />}
        </Group>
        <Text size="sm" c="dimmed">
          Its ledger entries in every generation (a RESTART opens a new one, under new idempotency keys), and every error its runs met.
        </Text>
      </div>

      <Card withBorder radius="md">
        <Title order={2} size="h4" mb="sm">
          Ledger entries
        </Title>
        <div className="table-wrap">
          <Table striped miw={900} verticalSpacing={6} data-testid="target-entries">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Generation</Table.Th>
                <Table.Th>Step</Table.Th>
                <Table.Th>State</Table.Th>
                <Table.Th>Attempts</Table.Th>
                <Table.Th>Idempotency key</Table.Th>
                <Table.Th>Effect / evidence</Table.Th>
                <Table.Th>Last error</Table.Th>
                <Table.Th>Last run</Table.Th>
                <Table.Th>Updated</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {t.entries.nodes.map((e) => (
                <Table.Tr key={e.id} data-testid="target-entry">
                  <Table.Td>{e.generation}</Table.Td>
                  <Table.Td>{e.step || '—'}</Table.Td>
                  <Table.Td>
                    <LedgerStateBadge state={e.state} />
                  </Table.Td>
                  <Table.Td>{attemptText(e.attempt)}</Table.Td>
                  <Table.Td>
                    <Text className="mono" style={{ overflowWrap: 'anywhere' }}>
                      {e.idempotencyKey}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Text className="mono">{e.effectRef ?? '—'}</Text>
                    {e.evidenceRef && (
                      <Text className="mono" c="dimmed">
                        {e.evidenceRef}
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td maw={280}>
                    <Text size="xs" c={e.lastError ? 'red' : 'dimmed'} lineClamp={3} title={e.lastError ?? undefined}>
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
        <Pager pager={entriesPager} hasNextPage={t.entries.pageInfo.hasNextPage} endCursor={t.entries.pageInfo.endCursor} label="entries" />
      </Card>

      <Card withBorder radius="md">
        <Title order={2} size="h4" mb="sm">
          Errors across runs
        </Title>
        {t.errors.nodes.length === 0 ? (
          <Text size="sm" c="dimmed">
            No run recorded an error for this target.
          </Text>
        ) : (
          <div className="table-wrap">
            <Table striped miw={760} verticalSpacing={6} data-testid="target-errors">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Run</Table.Th>
                  <Table.Th>Generation</Table.Th>
                  <Table.Th>Class</Table.Th>
                  <Table.Th>Attempt</Table.Th>
                  <Table.Th>Message</Table.Th>
                  <Table.Th>When</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {t.errors.nodes.map((e, i) => (
                  <Table.Tr key={`${e.run.id}-${i}`} data-testid="target-error">
                    <Table.Td>
                      <Anchor component={Link} to={runPath(e.run.id)} size="sm">
                        #{runNumber(e.run.id)}
                      </Anchor>
                    </Table.Td>
                    <Table.Td>{e.run.generation}</Table.Td>
                    <Table.Td>
                      <Code>{e.failureClass}</Code>
                    </Table.Td>
                    <Table.Td>{attemptText(e.attempt)}</Table.Td>
                    <Table.Td maw={360}>
                      <Text size="xs" c="red" style={{ overflowWrap: 'anywhere' }}>
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
        <Pager pager={errorsPager} hasNextPage={t.errors.pageInfo.hasNextPage} endCursor={t.errors.pageInfo.endCursor} label="errors" />
      </Card>
    </Stack>
  );
}
