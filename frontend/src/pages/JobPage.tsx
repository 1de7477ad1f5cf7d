// One job: its schedule (editor with preview, next 5 fires, time zone), its auto-resume policy,
// controls, active run, runs history, risk level and ledger summary, and its ledger.
import { Anchor, Badge, Card, Code, Grid, Group, List, Stack, Tabs, Text, Title } from '@mantine/core';
import { useCallback, useEffect, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useQuery, useSubscription } from 'urql';

import { JobQuery } from '../api/jobs';
import { RunEventsSubscription, runNumber, runPath, type RunSummary } from '../api/runs';
import { useOnReconnect } from '../auth/AuthContext';
import { AutoResumeEditor } from '../components/AutoResumeEditor';
import { RiskBadge, RunStatusBadge } from '../components/Badges';
import { JobControls } from '../components/JobControls';
import { JobHistory } from '../components/JobHistory';
import { LedgerSummary, LedgerTable } from '../components/LedgerTable';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { RunProgressBar } from '../components/RunProgressBar';
import { RunsTable } from '../components/RunsTable';
import { ScheduleEditor } from '../components/ScheduleEditor';
import { DateTime, TimeAgo } from '../components/Time';
import { currentRuns, emptyLiveRuns, reduceRunEvents } from '../live/runEvents';
import { policySummary } from '../model/autoresume';
import { cronInWords } from '../model/cron';
import { riskMeta } from '../model/status';
import { formatDateTime } from '../model/time';

export function JobPage() {
  const name = useParams()['name'] ?? '';
  const [{ data, fetching, error }, refetch] = useQuery({ query: JobQuery, variables: { name }, requestPolicy: 'cache-and-network' });
  const [events] = useSubscription({ query: RunEventsSubscription, variables: { jobName: name } }, reduceRunEvents);
  const [started, setStarted] = useState<RunSummary | undefined>(undefined);
  const live = events.data ?? emptyLiveRuns;
  const refetchFresh = useCallback(() => refetch({ requestPolicy: 'network-only' }), [refetch]);
  useEffect(() => {
    if (live.lifecycle > 0) refetchFresh();
  }, [live.lifecycle, refetchFresh]);
  useOnReconnect(refetchFresh);

  if (error && !data) return <ErrorAlert error={error} onRetry={refetchFresh} />;
  if (fetching && !data) return <Loading lines={8} label="Loading the job" />;
  const job = data?.job;
  if (!job) return <Empty title={`No job named ${name}`} description="It may not be registered on any instance." />;

  const liveRun = live.byJob[job.name] ?? started;
  const { active, last } = currentRuns(job, liveRun);
  const shown = active ?? last;

  return (
    <Stack>
      <Group justify="space-between" align="flex-start">
        <div>
          <Text size="sm">
            <Anchor component={Link} to="/admin">
              Jobs
            </Anchor>{' '}
            /
          </Text>
          <Group gap="sm">
            <Title order={1} size="h2" data-testid="job-name">
              {job.name}
            </Title>
            <RiskBadge risk={job.riskLevel} />
            {job.paused && (
              <Badge color="yellow" variant="filled">
                Paused
              </Badge>
            )}
          </Group>
          <Text c="dimmed" size="sm">
            {job.description}
          </Text>
        </div>
        <JobControls job={job} active={active} hasRun={last !== null} last={last} onRun={setStarted} size="sm" />
      </Group>

      <Grid>
        <Grid.Col span={{ base: 12, lg: 7 }}>
          <Card withBorder radius="md" h="100%">
            <Title order={2} size="h4" mb="sm">
              Schedule
            </Title>
            <Stack gap={4} mb="md">
              <Text data-testid="job-cron-words">{cronInWords(job.cron, job.timezone)}</Text>
              <Text size="sm" c="dimmed">
                {job.cron ? <Code>{job.cron}</Code> : 'no cron'} · {job.enabled ? 'enabled' : 'disabled'} · changed by {job.updatedBy || '—'}{' '}
                <TimeAgo iso={job.updatedAt} size="sm" />
              </Text>
              <Text size="sm" fw={600} mt="xs">
                Next 5 fire times ({job.timezone})
              </Text>
              {job.paused ? (
                <Text size="sm" c="dimmed" data-testid="next-fires" data-paused="true">
                  None while the job is paused: the schedule is kept and fires again once the job is unpaused.
                </Text>
              ) : job.nextFireTimes.length === 0 ? (
                <Text size="sm" c="dimmed" data-testid="next-fires">
                  {job.cron ? 'None: the schedule is disabled.' : 'None: manual runs only.'}
                </Text>
              ) : (
                <List size="sm" spacing={2} data-testid="next-fires">
                  {job.nextFireTimes.map((t) => (
                    <List.Item key={t}>{formatDateTime(t, job.timezone)}</List.Item>
                  ))}
                </List>
              )}
              {job.enabled && job.nextScheduledAt && (
                <Text size="xs" c="dimmed">
                  Claimed next fire: <DateTime iso={job.nextScheduledAt} timeZone={job.timezone} size="xs" />
                </Text>
              )}
            </Stack>
            <ScheduleEditor key={`${job.cron}|${job.timezone}|${job.enabled}|${job.leaseSeconds ?? ''}`} job={job} onSaved={refetchFresh} />
          </Card>
        </Grid.Col>
        <Grid.Col span={{ base: 12, lg: 5 }}>
          <Stack>
            <Card withBorder radius="md">
              <Title order={2} size="h4" mb="sm">
                {active ? 'Active run' : 'Last run'}
              </Title>
              {shown ? (
                <Stack gap="xs">
                  <Group gap="xs">
                    <Anchor component={Link} to={runPath(shown.id)} data-testid="job-run-link">
                      Run #{runNumber(shown.id)}
                    </Anchor>
                    <RunStatusBadge status={shown.status} needsAttention={shown.needsAttention} attention={shown.attention} />
                    <Text size="xs" c="dimmed">
                      started <TimeAgo iso={shown.startedAt} size="xs" />
                    </Text>
                  </Group>
                  <RunProgressBar progress={shown.progress} status={shown.status} needsAttention={shown.needsAttention} attention={shown.attention} />
                </Stack>
              ) : (
                <Text c="dimmed" size="sm">
                  Never run.
                </Text>
              )}
            </Card>
            <Card withBorder radius="md" data-testid="auto-resume-panel">
              <Title order={2} size="h4" mb={4}>
                Auto-resume
              </Title>
              <Text size="sm" c="dimmed" mb="sm" data-testid="auto-resume-summary">
                {policySummary(job.autoResume)}
              </Text>
              <AutoResumeEditor
                key={`${job.autoResume.enabled}|${job.autoResume.maxAttempts}|${job.autoResume.backoffSeconds}|${job.autoResume.on.join(',')}`}
                name={job.name}
                policy={job.autoResume}
                onSaved={refetchFresh}
              />
            </Card>
            <Card withBorder radius="md">
              <Title order={2} size="h4" mb="xs">
                Risk and ledger
              </Title>
              <Text size="sm" mb="xs">
                <b>{riskMeta(job.riskLevel).label}.</b> {riskMeta(job.riskLevel).description}
              </Text>
              <Text size="sm" c="dimmed" mb="xs">
                Version {job.version} · ledger generation {job.currentGeneration} · lease {job.leaseSeconds ? `${job.leaseSeconds}s` : 'default'}
              </Text>
              <LedgerSummary summary={job.ledgerSummary} />
            </Card>
          </Stack>
        </Grid.Col>
      </Grid>

      <JobHistory jobName={job.name} refreshKey={live.lifecycle} />

      <Card withBorder radius="md">
        <Tabs defaultValue="runs" keepMounted={false}>
          <Tabs.List>
            <Tabs.Tab value="runs">Runs</Tabs.Tab>
            <Tabs.Tab value="ledger">Ledger</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="runs" pt="md">
            <RunsTable jobName={job.name} refreshKey={live.lifecycle} />
          </Tabs.Panel>
          <Tabs.Panel value="ledger" pt="md">
            <LedgerTable jobName={job.name} />
          </Tabs.Panel>
        </Tabs>
      </Card>
    </Stack>
  );
}
