// Notifications: where alarms are delivered. Each channel with its secret's hint (never the
// secret), its rate and its routes; a form to add a channel and one to add a route; a test
// button; and the outbox's latest deliveries with their attempts and last error.
import { Badge, Button, Card, Code, Group, MultiSelect, NumberInput, Select, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconBellRinging } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation, useQuery } from 'urql';

import {
  DeleteNotificationChannelMutation,
  NotificationsQuery,
  SaveNotificationChannelMutation,
  SendTestNotificationMutation,
} from '../api/notifications';
import { useCan } from '../auth/AuthContext';
import { UserErrorList, Empty, ErrorAlert, Loading } from '../components/QueryState';
import { report } from '../components/report';
import type { AlertKind, ChannelKind, NotificationChannelFieldsFragment, Severity } from '../gql/graphql';
import type { UserErrorLike } from '../model/errors';
import { ALERT_KINDS, channelInput, emptyChannel, routeInputs, routeWords, secretLabel, splitList, type ChannelDraft } from '../model/notifications';

function AddChannel({ onSaved }: { onSaved: () => void }) {
  const [draft, setDraft] = useState<ChannelDraft>(emptyChannel);
  const [errors, setErrors] = useState<readonly UserErrorLike[]>([]);
  const [, save] = useMutation(SaveNotificationChannelMutation);
  const edit = (p: Partial<ChannelDraft>) => setDraft((d) => ({ ...d, ...p }));
  const submit = async () => {
    const res = await save({ input: channelInput(draft) });
    const errs = res.data?.saveNotificationChannel.userErrors ?? [];
    setErrors(errs);
    if (errs.length === 0 && report(res, (d) => d.saveNotificationChannel, `Channel ${draft.name} added`)) {
      setDraft(emptyChannel);
      onSaved();
    }
  };
  return (
    <Card withBorder data-testid="add-channel">
      <Stack gap="xs">
        <Title order={4}>Add a channel</Title>
        <Group align="flex-end" wrap="wrap">
          <TextInput label="Name" value={draft.name} onChange={(e) => edit({ name: e.currentTarget.value })} data-testid="channel-name" />
          <Select
            label="Kind"
            data={['WEBHOOK', 'SLACK', 'PAGERDUTY']}
            value={draft.kind}
            onChange={(v) => v && edit({ kind: v as ChannelKind })}
            allowDeselect={false}
            data-testid="channel-kind"
          />
          {draft.kind !== 'SLACK' && (
            <TextInput
              label="URL"
              placeholder={draft.kind === 'PAGERDUTY' ? 'Events v2 endpoint (default)' : 'https://…'}
              value={draft.url}
              onChange={(e) => edit({ url: e.currentTarget.value })}
              data-testid="channel-url"
              miw={260}
            />
          )}
          <TextInput
            label={secretLabel(draft.kind)}
            description="stored encrypted, or env:BATON_NOTIFY_NAME"
            type="password"
            autoComplete="off"
            value={draft.secret}
            onChange={(e) => edit({ secret: e.currentTarget.value })}
            data-testid="channel-secret"
            miw={220}
          />
          <NumberInput label="Per minute" placeholder="30" value={draft.ratePerMinute} onChange={(v) => edit({ ratePerMinute: typeof v === 'number' ? v : '' })} w={110} data-testid="channel-rate" />
          <Button onClick={submit} disabled={draft.name.trim() === '' || draft.secret === ''} data-testid="channel-add">
            Add channel
          </Button>
        </Group>
        <UserErrorList errors={errors} />
      </Stack>
    </Card>
  );
}

function AddRoute({ channel, onSaved }: { channel: NotificationChannelFieldsFragment; onSaved: () => void }) {
  const [kinds, setKinds] = useState<string[]>([]);
  const [jobs, setJobs] = useState('');
  const [severity, setSeverity] = useState<Severity>('WARNING');
  const [errors, setErrors] = useState<readonly UserErrorLike[]>([]);
  const [, save] = useMutation(SaveNotificationChannelMutation);
  const submit = async () => {
    const route = { kinds: kinds as AlertKind[], jobs: splitList(jobs), minSeverity: severity };
    const res = await save({ input: { id: channel.id, routes: routeInputs(channel.routes, route) } });
    const errs = res.data?.saveNotificationChannel.userErrors ?? [];
    setErrors(errs);
    if (errs.length === 0 && report(res, (d) => d.saveNotificationChannel, `Route added to ${channel.name}`)) {
      setKinds([]);
      setJobs('');
      onSaved();
    }
  };
  return (
    <Stack gap={4}>
      <Group align="flex-end" wrap="wrap">
        <MultiSelect label="Alarm kinds" placeholder="all" data={[...ALERT_KINDS]} value={kinds} onChange={setKinds} miw={260} data-testid="route-kinds" />
        <TextInput label="Jobs" placeholder="all (globs: pay-*, a?c)" value={jobs} onChange={(e) => setJobs(e.currentTarget.value)} data-testid="route-jobs" />
        <Select label="Severity" data={['WARNING', 'CRITICAL']} value={severity} onChange={(v) => v && setSeverity(v as Severity)} allowDeselect={false} w={130} data-testid="route-severity" />
        <Button variant="light" onClick={submit} data-testid="route-add">
          Add route
        </Button>
      </Group>
      <UserErrorList errors={errors} />
    </Stack>
  );
}

function ChannelCard({ channel: c, onChanged }: { channel: NotificationChannelFieldsFragment; onChanged: () => void }) {
  const admin = useCan('ADMIN');
  const operator = useCan('OPERATOR');
  const [, save] = useMutation(SaveNotificationChannelMutation);
  const [, remove] = useMutation(DeleteNotificationChannelMutation);
  const [, test] = useMutation(SendTestNotificationMutation);
  const dropRoute = async (i: number) => {
    if (report(await save({ input: { id: c.id, routes: routeInputs(c.routes, undefined, i) } }), (d) => d.saveNotificationChannel, 'Route removed')) onChanged();
  };
  return (
    <Card withBorder data-testid="channel-card" data-name={c.name}>
      <Stack gap="xs">
        <Group justify="space-between">
          <Group gap="xs">
            <Title order={4}>{c.name}</Title>
            <Badge variant="light">{c.kind}</Badge>
            <Text size="sm" c="dimmed">
              {c.url ?? 'URL kept secret'} · secret <Code data-testid="channel-secret-hint">{c.secretHint ?? 'not set'}</Code> · {c.ratePerMinute}/min, burst {c.burst}
            </Text>
          </Group>
          <Group gap="xs">
            {operator && (
              <Button size="xs" variant="light" data-testid="channel-test" onClick={async () => report(await test({ input: { channelId: c.id } }), (d) => d.sendTestNotification, `Test notification queued for ${c.name}`) && onChanged()}>
                Send test notification
              </Button>
            )}
            {admin && (
              <Button size="xs" color="red" variant="subtle" data-testid="channel-delete" onClick={async () => report(await remove({ input: { id: c.id } }), (d) => d.deleteNotificationChannel, `Channel ${c.name} removed`) && onChanged()}>
                Remove
              </Button>
            )}
          </Group>
        </Group>
        {c.routes.length === 0 && <Text size="sm" c="orange.7">No route: this channel receives no alarm (only tests).</Text>}
        {c.routes.map((r, i) => (
          <Group key={r.id} gap="xs" data-testid="route">
            <Text size="sm">→ {routeWords(r)}</Text>
            {admin && (
              <Button size="compact-xs" variant="subtle" color="gray" onClick={() => dropRoute(i)} data-testid="route-remove">
                remove
              </Button>
            )}
          </Group>
        ))}
        {admin && <AddRoute channel={c} onSaved={onChanged} />}
      </Stack>
    </Card>
  );
}

export function NotificationsPage() {
  const admin = useCan('ADMIN');
  const [{ data, error, fetching }, refetch] = useQuery({ query: NotificationsQuery, requestPolicy: 'network-only' });
  const again = () => refetch({ requestPolicy: 'network-only' });
  const channels = data?.notificationChannels ?? [];
  const names = new Map(channels.map((c) => [c.id, c.name]));
  return (
    <Stack>
      <Stack gap={2}>
        <Title order={2}>Notifications</Title>
        <Text size="sm" c="dimmed" maw={760}>
          Where alarms are delivered: each channel once when an alarm fires and once when it resolves, whatever the number of instances. Silenced alarms are
          delivered when their silence ends. Secrets are never shown.
        </Text>
      </Stack>
      {error && <ErrorAlert error={error} onRetry={again} />}
      {fetching && !data && <Loading lines={3} label="Loading channels" />}
      {admin && <AddChannel onSaved={again} />}
      {data && channels.length === 0 && <Empty title="No channel" description="Add a webhook, a Slack incoming webhook or a PagerDuty integration." icon={<IconBellRinging size={28} />} />}
      {channels.map((c) => (
        <ChannelCard key={c.id} channel={c} onChanged={again} />
      ))}
      {data && (
        <Card withBorder>
          <Group justify="space-between">
            <Title order={4}>Latest deliveries</Title>
            <Button size="xs" variant="subtle" onClick={again} data-testid="deliveries-refresh">
              Refresh
            </Button>
          </Group>
          {data.notificationDeliveries.length === 0 && (
            <Text size="sm" c="dimmed">
              No delivery yet.
            </Text>
          )}
          <Table.ScrollContainer minWidth={760}>
            <Table data-testid="deliveries">
              <Table.Thead>
                <Table.Tr>
                  <Table.Th>Created</Table.Th>
                  <Table.Th>Channel</Table.Th>
                  <Table.Th>Kind</Table.Th>
                  <Table.Th>Alarm</Table.Th>
                  <Table.Th>Status</Table.Th>
                  <Table.Th>Attempts</Table.Th>
                  <Table.Th>Last error</Table.Th>
                </Table.Tr>
              </Table.Thead>
              <Table.Tbody>
                {data.notificationDeliveries.map((d) => (
                  <Table.Tr key={d.id} data-testid="delivery" data-status={d.status}>
                    <Table.Td>{new Date(d.createdAt).toLocaleString()}</Table.Td>
                    <Table.Td>{names.get(d.channelId) ?? '—'}</Table.Td>
                    <Table.Td>{d.kind}</Table.Td>
                    <Table.Td>
                      <Code>{d.alertKey}</Code>
                    </Table.Td>
                    <Table.Td>
                      <Badge color={d.status === 'SENT' ? 'green' : d.status === 'FAILED' ? 'red' : 'orange'}>{d.status}</Badge>
                    </Table.Td>
                    <Table.Td>{d.attempts}</Table.Td>
                    <Table.Td>{d.lastError ?? ''}</Table.Td>
                  </Table.Tr>
                ))}
              </Table.Tbody>
            </Table>
          </Table.ScrollContainer>
        </Card>
      )}
    </Stack>
  );
}
