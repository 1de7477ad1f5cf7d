// Active alarms; new ones arrive live (the header badge counts them).
import { Anchor, Badge, Card, Group, Stack, Text, Title } from '@mantine/core';
import { IconBellOff } from '@tabler/icons-react';
import { Link } from 'react-router';
import { useQuery } from 'urql';

import { AlertsQuery } from '../api/alerts';
import { jobPath, runNumber, runPath } from '../api/runs';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { TimeAgo } from '../components/Time';
import { alertKindLabel, severityColor } from '../model/status';

export function AlertsPage() {
  const [{ data, fetching, error }, refetch] = useQuery({ query: AlertsQuery, requestPolicy: 'cache-and-network' });
  const alerts = data?.alerts ?? [];
  return (
    <Stack>
      <div>
        <Title order={1} size="h2">
          Alerts
        </Title>
        <Text c="dimmed" size="sm">
          Active alarms: stuck or dangerous signals. New ones appear live; an alarm disappears when its condition clears.
        </Text>
      </div>
      {error && !data && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !data && <Loading lines={4} label="Loading alerts" />}
      {data && alerts.length === 0 && <Empty title="No active alerts" description="All quiet." icon={<IconBellOff size={28} />} />}
      {alerts.map((a) => (
        <Card key={a.id} withBorder radius="md" data-testid="alert-card" style={{ borderLeft: `4px solid var(--mantine-color-${severityColor(a.severity)}-6)` }}>
          <Group justify="space-between" align="flex-start">
            <Stack gap={4}>
              <Group gap="xs">
                <Badge color={severityColor(a.severity)}>{a.severity}</Badge>
                <Text fw={700}>{alertKindLabel(a.kind)}</Text>
                <Anchor component={Link} to={jobPath(a.jobName)} size="sm">
                  {a.jobName}
                </Anchor>
                {a.run && (
                  <Anchor component={Link} to={runPath(a.run.id)} size="sm">
                    run #{runNumber(a.run.id)}
                  </Anchor>
                )}
                {a.target && (
                  <Text size="sm" c="dimmed">
                    target {a.target}
                  </Text>
                )}
              </Group>
              <Text size="sm">{a.message}</Text>
            </Stack>
            <Stack gap={0} align="flex-end">
              <Text size="sm" fw={600}>
                value {Number.isInteger(a.value) ? a.value : a.value.toFixed(3)}
              </Text>
              <Text size="xs" c="dimmed">
                since <TimeAgo iso={a.since} size="xs" />
              </Text>
            </Stack>
          </Group>
        </Card>
      ))}
    </Stack>
  );
}
