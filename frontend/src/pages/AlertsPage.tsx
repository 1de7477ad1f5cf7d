// Alarms: the active ones (acknowledge, silence for a while) and the history of every episode,
// fired and resolved. Their state is the cluster's: every instance shows the same.
import { Anchor, Badge, Card, Checkbox, Group, Select, Stack, Table, Tabs, Text, Title } from '@mantine/core';
import { IconBellOff } from '@tabler/icons-react';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useMutation, useQuery } from 'urql';

import { AcknowledgeAlertMutation, AlertHistoryQuery, AlertsQuery, SILENCE_CHOICES, SilenceAlertMutation } from '../api/alerts';
import { jobPath, runNumber, runPath } from '../api/runs';
import { ActionButton } from '../components/ActionButton';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { report } from '../components/report';
import { DateTime, TimeAgo } from '../components/Time';
import type { AlertFieldsFragment } from '../gql/graphql';
import { useCursorPager } from '../hooks/useCursorPager';
import { alertKindLabel, alertTitle, severityColor } from '../model/status';

/** alertValue renders an alarm's value: counts as integers, rates and seconds with decimals. */
export function alertValue(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(3);
}

function AlertLinks({ a }: { a: AlertFieldsFragment }) {
  return (
    <>
      {a.jobName ? (
        <Anchor component={Link} to={jobPath(a.jobName)} size="sm" data-testid="alert-job-link">
          {a.jobName}
        </Anchor>
      ) : (
        // A cluster-wide alarm (DOWNSTREAM_LIMIT_DEGRADED) concerns no job.
        <Anchor component={Link} to="/admin/downstreams" size="sm" data-testid="alert-downstreams-link">
          downstreams
        </Anchor>
      )}
      {a.run && (
        <Anchor component={Link} to={runPath(a.run.id)} size="sm" data-testid="alert-run-link">
          run #{runNumber(a.run.id)}
        </Anchor>
      )}
      {a.target && (
        <Text span size="sm" c="dimmed">
          target {a.target}
        </Text>
      )}
    </>
  );
}

function AlertActions({ a }: { a: AlertFieldsFragment }) {
  const [ackState, ack] = useMutation(AcknowledgeAlertMutation);
  const [silState, silence] = useMutation(SilenceAlertMutation);
  const [seconds, setSeconds] = useState<string>(String(3600));
  const label = alertTitle(a);
  return (
    <Stack gap={6} align="flex-end">
      {a.acknowledgedBy ? (
        <Text size="xs" data-testid="alert-acked">
          Acknowledged by <b>{a.acknowledgedBy}</b> <TimeAgo iso={a.acknowledgedAt} timeZone={a.job?.timezone} size="xs" />
        </Text>
      ) : (
        <ActionButton
          need="OPERATOR"
          size="xs"
          loading={ackState.fetching}
          data-testid="alert-ack"
          onClick={() => void ack({ input: { id: a.id } }).then((res) => report(res, (d) => d.acknowledgeAlert, `${label}: acknowledged`))}
        >
          Acknowledge
        </ActionButton>
      )}
      {a.silencedUntil ? (
        <Group gap="xs" wrap="nowrap">
          <Text size="xs" data-testid="alert-silenced">
            Silenced by <b>{a.silencedBy}</b> until <DateTime iso={a.silencedUntil} timeZone={a.job?.timezone} size="xs" />
          </Text>
          <ActionButton
            need="OPERATOR"
            size="xs"
            variant="default"
            loading={silState.fetching}
            data-testid="alert-unsilence"
            onClick={() => void silence({ input: { id: a.id, seconds: 0 } }).then((res) => report(res, (d) => d.silenceAlert, `${label}: silence lifted`))}
          >
            Lift silence
          </ActionButton>
        </Group>
      ) : (
        <Group gap="xs" wrap="nowrap">
          <Select
            size="xs"
            w={120}
            aria-label="Silence for"
            data={SILENCE_CHOICES.map((c) => ({ value: String(c.seconds), label: c.label }))}
            value={seconds}
            onChange={(v) => v && setSeconds(v)}
            allowDeselect={false}
            data-testid="alert-silence-for"
          />
          <ActionButton
            need="OPERATOR"
            size="xs"
            variant="default"
            loading={silState.fetching}
            data-testid="alert-silence"
            onClick={() =>
              void silence({ input: { id: a.id, seconds: Number(seconds) } }).then((res) => report(res, (d) => d.silenceAlert, `${label}: silenced`))
            }
          >
            Silence
          </ActionButton>
        </Group>
      )}
    </Stack>
  );
}

function ActiveAlerts() {
  const [showSilenced, setShowSilenced] = useState(false);
  const [{ data, fetching, error }, refetch] = useQuery({ query: AlertsQuery, variables: { includeSilenced: true }, requestPolicy: 'cache-and-network' });
  const all = data?.alerts ?? [];
  const silencedCount = all.filter((a) => a.silencedUntil).length;
  const alerts = showSilenced ? all : all.filter((a) => !a.silencedUntil);
  return (
    <Stack>
      <Checkbox
        label={`Show silenced alarms (${silencedCount})`}
        checked={showSilenced}
        onChange={(e) => setShowSilenced(e.currentTarget.checked)}
        data-testid="show-silenced"
      />
      {error && !data && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !data && <Loading lines={4} label="Loading alerts" />}
      {data && alerts.length === 0 && (
        <Empty
          title="No active alerts"
          description={silencedCount > 0 ? `${silencedCount} silenced alarm(s) hidden.` : 'All quiet.'}
          icon={<IconBellOff size={28} />}
        />
      )}
      {alerts.map((a) => (
        <Card
          key={a.id}
          withBorder
          radius="md"
          data-testid="alert-card"
          data-alert-id={a.id}
          data-acked={a.acknowledgedBy ? 'true' : 'false'}
          data-silenced={a.silencedUntil ? 'true' : 'false'}
          style={{ borderLeft: `4px solid var(--mantine-color-${a.acknowledgedBy || a.silencedUntil ? 'gray' : severityColor(a.severity)}-6)` }}
        >
          <Group justify="space-between" align="flex-start">
            <Stack gap={4} style={{ flex: '1 1 18rem', minWidth: 0 }}>
              <Group gap="xs">
                <Badge color={severityColor(a.severity)}>{a.severity}</Badge>
                <Text fw={700}>{alertKindLabel(a.kind)}</Text>
                <AlertLinks a={a} />
              </Group>
              <Text size="sm">{a.message}</Text>
              <Text size="xs" c="dimmed">
                value {alertValue(a.value)} · since <TimeAgo iso={a.since} timeZone={a.job?.timezone} size="xs" /> · fired{' '}
                <DateTime iso={a.firedAt} timeZone={a.job?.timezone} size="xs" />
              </Text>
            </Stack>
            <AlertActions a={a} />
          </Group>
        </Card>
      ))}
    </Stack>
  );
}

function AlertHistory() {
  const pager = useCursorPager();
  const [params] = useSearchParams();
  const jobName = params.get('job') || null;
  const [{ data, fetching, error }, refetch] = useQuery({
    query: AlertHistoryQuery,
    variables: { jobName, first: 50, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  const conn = data?.alertHistory;
  return (
    <Stack>
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading lines={6} label="Loading the alert history" />}
      {conn && conn.nodes.length === 0 && <Empty title="No alarm has fired yet" />}
      {conn && conn.nodes.length > 0 && (
        <div className="table-wrap">
          <Table striped verticalSpacing={6} miw={900} data-testid="alert-history">
            <Table.Thead>
              <Table.Tr>
                <Table.Th>Fired</Table.Th>
                <Table.Th>Resolved</Table.Th>
                <Table.Th>Alarm</Table.Th>
                <Table.Th>Concerns</Table.Th>
                <Table.Th>Acknowledged</Table.Th>
                <Table.Th>Message</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {conn.nodes.map((a) => (
                <Table.Tr key={a.episodeId} data-testid="alert-history-row" data-active={a.active ? 'true' : 'false'}>
                  <Table.Td>
                    <DateTime iso={a.firedAt} timeZone={a.job?.timezone} size="sm" />
                  </Table.Td>
                  <Table.Td>
                    {a.resolvedAt ? (
                      <DateTime iso={a.resolvedAt} timeZone={a.job?.timezone} size="sm" />
                    ) : (
                      <Badge color={severityColor(a.severity)} variant="light">
                        active
                      </Badge>
                    )}
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm" fw={600}>
                      {alertKindLabel(a.kind)}
                    </Text>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={6}>
                      <AlertLinks a={a} />
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    {a.acknowledgedBy ? (
                      <Text size="sm">
                        {a.acknowledgedBy} <TimeAgo iso={a.acknowledgedAt} timeZone={a.job?.timezone} size="xs" c="dimmed" />
                      </Text>
                    ) : (
                      <Text size="sm" c="dimmed">
                        —
                      </Text>
                    )}
                  </Table.Td>
                  <Table.Td maw={420}>
                    <Text size="sm" lineClamp={2}>
                      {a.message}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="alert history" />}
    </Stack>
  );
}

export function AlertsPage() {
  const [params, setParams] = useSearchParams();
  const tab = params.get('tab') === 'history' ? 'history' : 'active';
  return (
    <Stack>
      <div>
        <Title order={1} size="h2">
          Alerts
        </Title>
        <Text c="dimmed" size="sm">
          Stuck or dangerous signals. Acknowledge one to say someone is on it; silence one to hide it for a while. An alarm
          resolves by itself when its condition clears, and its episode stays in the history.
        </Text>
      </div>
      <Tabs
        value={tab}
        onChange={(v) => {
          const next = new URLSearchParams(params);
          if (v === 'history') next.set('tab', 'history');
          else next.delete('tab');
          setParams(next, { replace: true });
        }}
      >
        <Tabs.List>
          <Tabs.Tab value="active" data-testid="alerts-tab-active">
            Active
          </Tabs.Tab>
          <Tabs.Tab value="history" data-testid="alerts-tab-history">
            History
          </Tabs.Tab>
        </Tabs.List>
      </Tabs>
      {tab === 'active' ? <ActiveAlerts /> : <AlertHistory />}
    </Stack>
  );
}
