// The jobs dashboard, a page of jobs at a time: each with its schedule in words, next fire, enabled toggle, last
// run, live progress of the active run, and the run and job controls. Live via runEvents.
import { Anchor, Badge, Button, Card, Code, Group, Modal, SimpleGrid, Stack, Text, TextInput, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { notifications } from '@mantine/notifications';
import { IconSearch } from '@tabler/icons-react';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';

import { JOBS_PAGE_SIZE, JobsQuery, UpdateJobScheduleMutation } from '../api/jobs';
import { jobPath, runNumber, runPath, RunEventsSubscription, type RunSummary } from '../api/runs';
import { SetMaintenanceMutation } from '../api/viewer';
import { useOnReconnect } from '../auth/AuthContext';
import { ActionSwitch } from '../components/ActionButton';
import { JobControls } from '../components/JobControls';
import { RiskBadge, RunStatusBadge } from '../components/Badges';
import { useMaintenance } from '../components/Layout';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { report } from '../components/report';
import { RunProgressBar } from '../components/RunProgressBar';
import { DateTime, TimeAgo } from '../components/Time';
import { useCursorPager } from '../hooks/useCursorPager';
import type { JobsQuery as JobsQueryData } from '../gql/graphql';
import { currentRuns, emptyLiveRuns, reduceRunEvents, withRun, type LiveRuns } from '../live/runEvents';
import { policySummary } from '../model/autoresume';
import { cronInWords } from '../model/cron';
import { attentionWords, needsAttention } from '../model/status';

type Job = JobsQueryData['jobs']['nodes'][number];

function JobCard({ job, live, onStarted }: { job: Job; live: RunSummary | undefined; onStarted: (r: RunSummary) => void }) {
  const { active, last } = currentRuns(job, live);
  const [, updateSchedule] = useMutation(UpdateJobScheduleMutation);
  const [busy, setBusy] = useState(false);
  const shown = active ?? last;
  const testid = (s: string) => `${s}-${job.name}`;

  return (
    <Card withBorder radius="md" padding="md" data-testid={testid('job-card')} component="article" aria-labelledby={testid('job-title')}>
      <Stack gap="sm">
        <Group justify="space-between" align="flex-start" wrap="nowrap">
          <div style={{ minWidth: 0 }}>
            <Anchor component={Link} to={jobPath(job.name)} fw={700} size="lg" id={testid('job-title')} data-testid={testid('job-link')}>
              {job.name}
            </Anchor>
            <Text size="xs" c="dimmed" lineClamp={2}>
              {job.description || 'No description.'}
            </Text>
          </div>
          <Group gap={4} wrap="nowrap" style={{ flexShrink: 0 }}>
            {job.paused && (
              <Badge color="yellow" variant="filled" data-testid={testid('paused')}>
                Paused
              </Badge>
            )}
            <RiskBadge risk={job.riskLevel} />
          </Group>
        </Group>

        <Stack gap={2}>
          <Text size="sm" data-testid={testid('cron-words')}>
            {cronInWords(job.cron, job.timezone)}
          </Text>
          <Group gap="xs">
            {job.cron && <Code>{job.cron}</Code>}
            <Text size="xs" c="dimmed" data-testid={testid('next-fire')}>
              next fire:{' '}
              {job.paused ? (
                'none while paused'
              ) : job.enabled && job.nextScheduledAt ? (
                <DateTime iso={job.nextScheduledAt} timeZone={job.timezone} size="xs" />
              ) : job.cron ? (
                'schedule off'
              ) : (
                'none'
              )}
            </Text>
          </Group>
          <ActionSwitch
            need="OPERATOR"
            blockedBy={job.cron === '' ? 'The job has no cron: set one on the job page.' : busy ? 'Saving…' : null}
            label="Schedule enabled"
            size="sm"
            checked={job.enabled}
            onChange={(checked) => {
              setBusy(true);
              void updateSchedule({ input: { name: job.name, enabled: checked } })
                .then((res) => report(res, (d) => d.updateJobSchedule, `${job.name}: schedule ${checked ? 'enabled' : 'disabled'}`))
                .finally(() => setBusy(false));
            }}
            data-testid={testid('enabled')}
          />
          <Text size="xs" c="dimmed" data-testid={testid('auto-resume')}>
            {policySummary(job.autoResume)}
          </Text>
        </Stack>

        <Stack gap={6} mih={88}>
          {shown ? (
            <>
              <Group gap="xs" justify="space-between">
                <Group gap="xs">
                  <Text size="sm" c="dimmed">
                    {active ? 'Active run' : 'Last run'}
                  </Text>
                  <Anchor component={Link} to={runPath(shown.id)} size="sm" data-testid={testid('run-link')}>
                    #{runNumber(shown.id)}
                  </Anchor>
                  <RunStatusBadge status={shown.status} needsAttention={shown.needsAttention} attention={shown.attention} testid={testid('run-status')} />
                  {shown.cancelRequested && active && (
                    <Badge color="gray" variant="outline" size="sm">
                      cancelling
                    </Badge>
                  )}
                </Group>
                <Text size="xs" c="dimmed">
                  {active ? (
                    <>
                      started <TimeAgo iso={shown.startedAt} size="xs" />
                    </>
                  ) : (
                    <>
                      ended <TimeAgo iso={shown.finishedAt} size="xs" />
                    </>
                  )}
                </Text>
              </Group>
              <div data-testid={testid('progress')}>
                <RunProgressBar progress={shown.progress} status={shown.status} needsAttention={shown.needsAttention} attention={shown.attention} size="md" counts={false} />
              </div>
              {needsAttention(shown) && (
                <Text size="xs" c="orange.8" fw={600} data-testid={testid('attention')}>
                  Needs attention: {attentionWords(shown.attention)}
                </Text>
              )}
            </>
          ) : (
            <Text size="sm" c="dimmed">
              Never run.
            </Text>
          )}
        </Stack>

        <JobControls job={job} active={active} hasRun={last !== null} last={last} onRun={onStarted} />
      </Stack>
    </Card>
  );
}

function MaintenanceControl() {
  const { on, refresh } = useMaintenance();
  const [, setMaintenance] = useMutation(SetMaintenanceMutation);
  const [confirmOpened, confirm] = useDisclosure(false);
  const apply = async (paused: boolean) => {
    const p = report(await setMaintenance({ paused }), (d) => d.setMaintenance, paused ? 'Maintenance is on' : 'Maintenance lifted');
    if (p && !paused && p.resumedRuns.length > 0) {
      notifications.show({ color: 'blue', message: `${p.resumedRuns.length} run(s) resumed after maintenance: ${p.resumedRuns.map((r) => r.jobName).join(', ')}` });
    }
    refresh();
  };
  return (
    <>
      <ActionSwitch
        need="OPERATOR"
        label="Maintenance"
        description="Pause the whole cluster"
        color="yellow"
        checked={on ?? false}
        onChange={(checked) => (checked ? confirm.open() : void apply(false))}
        data-testid="maintenance-switch"
      />
      <Modal opened={confirmOpened} onClose={confirm.close} title="Turn maintenance on?">
        <Stack>
          <Text size="sm">
            Every active run stops at its next item boundary with status PAUSED, and no run starts — scheduled or
            manual — until maintenance is lifted. Lifting it resumes the paused runs.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={confirm.close}>
              Cancel
            </Button>
            <Button
              color="yellow"
              onClick={() => {
                confirm.close();
                void apply(true);
              }}
              data-testid="maintenance-confirm"
            >
              Turn maintenance on
            </Button>
          </Group>
        </Stack>
      </Modal>
    </>
  );
}

export function JobsPage() {
  const pager = useCursorPager();
  const [{ data, fetching, error }, refetch] = useQuery({
    query: JobsQuery,
    variables: { first: JOBS_PAGE_SIZE, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  const [events] = useSubscription({ query: RunEventsSubscription, variables: { jobName: null } }, reduceRunEvents);
  const [started, setStarted] = useState<LiveRuns>(emptyLiveRuns);
  const [filter, setFilter] = useState('');

  const live = events.data ?? emptyLiveRuns;
  const lifecycle = live.lifecycle;
  const refetchFresh = useCallback(() => refetch({ requestPolicy: 'network-only' }), [refetch]);
  useEffect(() => {
    if (lifecycle > 0) refetchFresh();
  }, [lifecycle, refetchFresh]);
  useOnReconnect(refetchFresh);

  const jobs = useMemo(() => {
    const all = data?.jobs.nodes ?? [];
    const f = filter.trim().toLowerCase();
    return f ? all.filter((j) => j.name.toLowerCase().includes(f) || j.description.toLowerCase().includes(f)) : all;
  }, [data, filter]);

  const liveRun = (name: string): RunSummary | undefined => {
    const a = live.byJob[name];
    const b = started.byJob[name];
    if (!a) return b;
    if (!b) return a;
    return Date.parse(b.startedAt) > Date.parse(a.startedAt) ? b : a;
  };

  return (
    <Stack>
      <Group justify="space-between" align="flex-end">
        <div>
          <Title order={1} size="h2">
            Jobs
          </Title>
          <Text c="dimmed" size="sm">
            Live: progress and status arrive over the subscription, without reloading.
          </Text>
        </div>
        <Group align="flex-end">
          <TextInput
            aria-label="Filter jobs"
            placeholder="Filter jobs"
            leftSection={<IconSearch size={14} />}
            value={filter}
            onChange={(e) => setFilter(e.currentTarget.value)}
            w={200}
          />
          <MaintenanceControl />
        </Group>
      </Group>
      {error && !data && <ErrorAlert error={error} onRetry={refetchFresh} />}
      {events.error && <ErrorAlert error={events.error} />}
      {fetching && !data && <Loading lines={6} label="Loading jobs" />}
      {data && jobs.length === 0 && (
        <Empty
          title={filter ? 'No job on this page matches the filter' : 'No jobs registered'}
          description={filter ? 'Clear the filter, or look on the other pages.' : 'Jobs appear once an instance registers them (try baton serve --demo).'}
        />
      )}
      <SimpleGrid cols={{ base: 1, sm: 2, xl: 3 }} spacing="md">
        {jobs.map((j) => (
          <JobCard key={j.id} job={j} live={liveRun(j.name)} onStarted={(r) => setStarted((s) => withRun(s, r))} />
        ))}
      </SimpleGrid>
      {data && <Pager pager={pager} hasNextPage={data.jobs.pageInfo.hasNextPage} endCursor={data.jobs.pageInfo.endCursor} label="jobs" />}
    </Stack>
  );
}
