// One run, live: progress bar and counts, items/s sparkline, ETA, checkpoint, lease countdown
// and holder, cancel and resume; its place in a chain of automatic resumes; its status
// timeline, errors and ledger.
import { Anchor, Badge, Button, Card, Code, Grid, Group, SimpleGrid, Stack, Tabs, Text, Timeline, Title, Tooltip } from '@mantine/core';
import { IconPlayerPlay, IconPlayerStop, IconRepeat } from '@tabler/icons-react';
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';

import { StartJobMutation } from '../api/jobs';
import { CancelRunMutation, jobPath, RunEventsSubscription, RunProgressSubscription, RunQuery, runNumber, runPath } from '../api/runs';
import { useOnReconnect } from '../auth/AuthContext';
import { ActionButton } from '../components/ActionButton';
import { AutoResumeChain } from '../components/AutoResumeChain';
import { RiskBadge, RunStatusBadge, TriggerBadge } from '../components/Badges';
import { cancelBlockedBy, startBlockedBy } from '../components/JobControls';
import { useMaintenance } from '../components/Layout';
import { LedgerSummary, LedgerTable } from '../components/LedgerTable';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { report } from '../components/report';
import { RunErrors } from '../components/RunErrors';
import { RunProgressBar } from '../components/RunProgressBar';
import { RunTimeline, timelineKindLabel } from '../components/RunTimeline';
import { ShardGrid } from '../components/ShardGrid';
import { Sparkline } from '../components/Sparkline';
import { DateTime, TimeAgo } from '../components/Time';
import type { RunLiveFieldsFragment } from '../gql/graphql';
import { useNow } from '../hooks/useNow';
import { reduceRunEvents } from '../live/runEvents';
import { currentRate, reduceRunProgress } from '../live/runProgress';
import type { ChainRun } from '../model/autoresume';
import { attentionWords, isActive, needsAttention, runStatusMeta, stopReasonWords } from '../model/status';
import { etaMs, formatDuration, formatEta, formatRelative } from '../model/time';

/** How often an active run's page re-reads what the live updates do not carry. */
const LEDGER_REFRESH_MS = 5_000;

/**
 * ledgerCountsNote says how the ledger's counts of a run relate to the header's: the ledger
 * holds the entries this run wrote, while "processed" also counts the items it passed over
 * because an earlier run of the generation had settled them (confirmed, or in doubt).
 */
export function ledgerCountsNote(summary: readonly { count: number }[], progress: { processed: number }, active: boolean): string {
  const written = summary.reduce((n, c) => n + c.count, 0);
  const other = progress.processed - written;
  const entries = `${written} ledger entr${written === 1 ? 'y' : 'ies'} written by this run`;
  const base = `${entries}, by state`;
  // While the run is active the counts are re-read every few seconds and trail the live header:
  // a gap then says nothing about earlier runs.
  if (active) return `${entries} so far, by state (re-read every few seconds, so they may trail the ${progress.processed} items processed).`;
  const why =
    other > 0
      ? `; the other ${other} of the ${progress.processed} items processed were settled by earlier runs of this generation and not written again`
      : '';
  return `${base}${why}.`;
}

function Stat({ label, children, testid }: { label: string; children: React.ReactNode; testid?: string }) {
  return (
    <div>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <div data-testid={testid}>{children}</div>
    </div>
  );
}

/** averageRate is a finished run's items per second between activation and the end. */
function averageRate(run: RunLiveFieldsFragment): number | null {
  const from = Date.parse(run.activatedAt ?? run.startedAt);
  const to = run.finishedAt ? Date.parse(run.finishedAt) : NaN;
  if (Number.isNaN(from) || Number.isNaN(to) || to <= from) return null;
  return run.progress.processed / ((to - from) / 1000);
}

function LeaseCountdown({ run, now }: { run: RunLiveFieldsFragment; now: number }) {
  if (run.shardTotal && isActive(run.status)) {
    // A sharded run holds no lease of its own once planned: each shard holds one.
    return (
      <Text size="sm" c="dimmed" data-testid="run-lease-sharded">
        held by its shards (below)
      </Text>
    );
  }
  if (!isActive(run.status)) {
    return (
      <Text size="sm" c="dimmed">
        released (run ended)
      </Text>
    );
  }
  const left = Date.parse(run.leaseUntil) - now;
  const beat = now - Date.parse(run.heartbeatAt);
  return (
    <Stack gap={0} data-lease-left-ms={Math.round(left)} data-heartbeat-age-ms={Math.round(beat)}>
      <Text size="sm" fw={600} c={left < 0 ? 'red' : left < 5000 ? 'orange' : undefined}>
        {left >= 0 ? `ends in ${formatDuration(left)}` : `expired ${formatDuration(-left)} ago`}
      </Text>
      <Text size="xs" c="dimmed">
        held by <Code>{run.instance || '—'}</Code>
      </Text>
      <Text size="xs" c="dimmed">
        heartbeat {formatRelative(run.heartbeatAt, now)}
      </Text>
    </Stack>
  );
}

export function RunPage() {
  const id = useParams()['id'] ?? '';
  const navigate = useNavigate();
  const { on: maintenance } = useMaintenance();
  const [{ data, fetching, error }, refetch] = useQuery({ query: RunQuery, variables: { id }, requestPolicy: 'cache-and-network' });
  const [liveRes] = useSubscription({ query: RunProgressSubscription, variables: { runId: id } }, reduceRunProgress);
  const [, cancelRun] = useMutation(CancelRunMutation);
  const [, startJob] = useMutation(StartJobMutation);
  const [busy, setBusy] = useState<string | null>(null);
  const now = useNow(1000);

  const live = liveRes.data;
  // While the query for a new id is in flight, urql may still hold the previous run.
  const fetched = data?.run?.id === id ? data.run : undefined;
  // The subscription's snapshot is newer than the query's once it arrives.
  // Once the database says the run has ended, it is the final word.
  const run: RunLiveFieldsFragment | undefined =
    fetched && !isActive(fetched.status) ? fetched : live && live.run.id === id ? live.run : fetched ?? undefined;
  const status = run?.status;
  const refetchFresh = useCallback(() => refetch({ requestPolicy: 'network-only' }), [refetch]);

  // When the run ends (or changes status), reload what the subscription does not carry.
  const [refreshKey, setRefreshKey] = useState(0);
  const [refreshedFor, setRefreshedFor] = useState<string | null>(null);
  useEffect(() => {
    if (!status || !fetched || status === fetched.status || refreshedFor === status) return;
    setRefreshedFor(status);
    setRefreshKey((k) => k + 1);
    refetchFresh();
  }, [status, fetched, refreshedFor, refetchFresh]);
  useOnReconnect(refetchFresh);

  // The ledger counts are not in the live updates: while the run is active, re-read them so
  // they keep up with the header's.
  const activeNow = status !== undefined && isActive(status);
  useEffect(() => {
    if (!activeNow) return;
    const t = window.setInterval(refetchFresh, LEDGER_REFRESH_MS);
    return () => window.clearInterval(t);
  }, [activeNow, refetchFresh]);

  // While the run waits for its automatic resume, the job's next run (the resume, or a
  // person's) changes what this page says: reload on the job's run lifecycle events.
  const resumePending = fetched?.autoResume?.outcome === 'PENDING';
  const [jobEvents] = useSubscription(
    { query: RunEventsSubscription, variables: { jobName: fetched?.jobName ?? '' }, pause: !resumePending },
    reduceRunEvents,
  );
  const jobLifecycle = jobEvents.data?.lifecycle ?? 0;
  useEffect(() => {
    if (jobLifecycle > 0) refetchFresh();
  }, [jobLifecycle, refetchFresh]);

  const rate = run ? (isActive(run.status) ? currentRate(live, run, now) : averageRate(run)) : null;
  const eta = run && isActive(run.status) ? etaMs(run.progress.total, run.progress.processed, rate) : run ? 0 : null;

  const timeline = useMemo(() => {
    const items: { at: string; title: string; detail: string; color: string }[] = [];
    // Shards' claims are on the time axis, one lane per shard; here they would bury the rest.
    for (const e of (fetched?.events ?? []).filter((e) => e.kind !== 'LEASE_RENEWED' && e.kind !== 'SHARD_CLAIMED')) {
      items.push({ at: e.at, title: timelineKindLabel(e.kind), detail: e.detail, color: e.kind === 'FINISHED' ? 'gray' : 'blue' });
    }
    // Status changes seen live after the page opened (the first is the snapshot, not a
    // change); the end is the server's FINISHED event once it is loaded.
    const finished = items.some((i) => i.title === 'Finished');
    for (const c of (live?.changes ?? []).slice(1)) {
      if (finished && !isActive(c.status)) continue;
      items.push({ at: c.at, title: runStatusMeta(c.status).label, detail: 'seen live', color: runStatusMeta(c.status).color });
    }
    return items.sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  }, [fetched, live]);

  if (error && !data) return <ErrorAlert error={error} onRetry={refetchFresh} />;
  if ((fetching && !fetched) || (data?.run && !fetched)) return <Loading lines={8} label="Loading the run" />;
  if (!fetched || !run) return <Empty title="No such run" description={`There is no run with id ${id}.`} />;

  const active = isActive(run.status);
  const job = fetched.job;
  const startBlocked = startBlockedBy({ paused: false }, active ? run : null, maintenance);
  const ar = fetched.autoResume;
  const chain: ChainRun = {
    attempt: fetched.attempt,
    resumedFrom: fetched.resumedFrom?.id ?? null,
    autoResume: ar ? { outcome: ar.outcome, dueAt: ar.dueAt, maxAttempts: ar.maxAttempts, resumedBy: ar.resumedBy?.id ?? null } : null,
    maxAttempts: job.autoResume.maxAttempts,
  };

  const cancel = async () => {
    setBusy('cancel');
    report(await cancelRun({ runId: run.id }), (d) => d.cancelRun, `Run #${runNumber(run.id)}: cancel requested`);
    setBusy(null);
  };
  const resume = async () => {
    setBusy('resume');
    const p = report(await startJob({ name: run.jobName, mode: 'RESUME' }), (d) => d.startJob, `${run.jobName}: resumed from the checkpoint`);
    setBusy(null);
    if (p?.run) navigate(runPath(p.run.id));
  };

  return (
    <Stack>
      <div>
        <Text size="sm">
          <Anchor component={Link} to="/admin">
            Jobs
          </Anchor>{' '}
          /{' '}
          <Anchor component={Link} to={jobPath(run.jobName)}>
            {run.jobName}
          </Anchor>{' '}
          /
        </Text>
        <Group justify="space-between" align="flex-start">
          <Group gap="sm">
            <Title order={1} size="h2" data-testid="run-title" data-run-id={run.id}>
              Run #{runNumber(run.id)}
            </Title>
            <RunStatusBadge status={run.status} needsAttention={run.needsAttention} attention={run.attention} />
            <TriggerBadge trigger={fetched.trigger} />
            <RiskBadge risk={job.riskLevel} />
            {run.cancelRequested && active && (
              <Badge color="gray" variant="outline" data-testid="cancel-requested">
                cancel requested{run.cancelRequestedBy ? ` by ${run.cancelRequestedBy}` : ''}
              </Badge>
            )}
            {run.pauseRequested && active && (
              <Badge color="yellow" variant="outline">
                pause requested
              </Badge>
            )}
          </Group>
          <Group gap="xs">
            <ActionButton
              need="OPERATOR"
              blockedBy={cancelBlockedBy(active ? run : null)}
              color="red"
              variant="light"
              leftSection={<IconPlayerStop size={16} />}
              loading={busy === 'cancel'}
              onClick={() => void cancel()}
              data-testid="run-cancel"
            >
              Cancel run
            </ActionButton>
            <Tooltip label="Start a RESUME run of the job: it continues from the last committed checkpoint" withArrow disabled={startBlocked !== null}>
              <span>
                <ActionButton
                  need="OPERATOR"
                  blockedBy={active ? 'The run is still active.' : run.status === 'SUCCEEDED' ? 'The run succeeded: there is nothing to resume.' : startBlocked}
                  leftSection={<IconPlayerPlay size={16} />}
                  loading={busy === 'resume'}
                  onClick={() => void resume()}
                  data-testid="run-resume"
                >
                  Resume from checkpoint
                </ActionButton>
              </span>
            </Tooltip>
            <Button
              component={Link}
              to={`${runPath(run.id)}/replay`}
              variant="default"
              leftSection={<IconRepeat size={16} />}
              data-testid="run-replay-link"
            >
              Replay…
            </Button>
          </Group>
        </Group>
        <Text size="sm" c="dimmed">
          {fetched.mode} · requested by {fetched.requestedBy} · generation {fetched.generation} · job version{' '}
          {fetched.jobVersion}
          {fetched.scheduledFor && (
            <>
              {' '}
              · for the fire at <DateTime iso={fetched.scheduledFor} timeZone={job.timezone} size="sm" />
            </>
          )}
        </Text>
        {fetched.resumedFrom && fetched.attempt === 0 && (
          <Text size="sm" data-testid="resumed-from">
            Continues{' '}
            <Anchor component={Link} to={runPath(fetched.resumedFrom.id)}>
              run #{runNumber(fetched.resumedFrom.id)}
            </Anchor>{' '}
            ({runStatusMeta(fetched.resumedFrom.status).label.toLowerCase()})
          </Text>
        )}
        {fetched.replayRequest && (
          <Text size="sm" data-testid="run-replay-request">
            Started by{' '}
            <Anchor component={Link} to={`/admin/replays?request=${encodeURIComponent(fetched.replayRequest.id)}`} data-testid="run-replay-request-link">
              {fetched.replayRequest.kind === 'RESTART' ? 'restart' : 'replay'} request #{runNumber(fetched.replayRequest.id)}
            </Anchor>{' '}
            of {fetched.replayRequest.requestedBy}
            {fetched.replayRequest.decidedBy && <>, approved by {fetched.replayRequest.decidedBy}</>}
            {fetched.replayRequest.kind !== 'RESTART' && (
              <>
                {' '}
                · replays{' '}
                <Anchor component={Link} to={runPath(fetched.replayRequest.sourceRun.id)}>
                  run #{runNumber(fetched.replayRequest.sourceRun.id)}
                </Anchor>
              </>
            )}
          </Text>
        )}
        <AutoResumeChain run={chain} now={now} />
      </div>

      {fetched.shardOf && (
        <Text size="sm" data-testid="run-shard-of">
          This is shard <Code>{fetched.shardKey}</Code> of{' '}
          <Anchor component={Link} to={runPath(fetched.shardOf.id)} data-testid="run-shard-of-link">
            run #{runNumber(fetched.shardOf.id)}
          </Anchor>
          , which operators cancel, pause and watch as a whole.
        </Text>
      )}

      <Card withBorder radius="md">
        <Stack>
          <RunProgressBar progress={run.progress} status={run.status} needsAttention={run.needsAttention} attention={run.attention} size="xl" />
          {needsAttention(run) && (
            <Text size="sm" c="orange.8" fw={600} data-testid="run-attention">
              {active ? 'So far: ' : 'Needs attention: '}
              {attentionWords(run.attention)}. See the errors and the ledger below.
            </Text>
          )}
          <SimpleGrid cols={{ base: 2, sm: 3, lg: 6 }} spacing="md">
            <Stat label="Items / s" testid="run-rate">
              <Text size="sm" fw={600}>
                {rate === null ? '—' : rate.toFixed(rate < 10 ? 1 : 0)}
              </Text>
              {(live?.rates.length ?? 0) > 1 && <Sparkline values={live?.rates ?? []} label="Items per second, one point a second" width={140} height={32} />}
              {!active && (
                <Text size="xs" c="dimmed">
                  average over the run
                </Text>
              )}
            </Stat>
            <Stat label="ETA" testid="run-eta">
              <Text size="sm" fw={600}>
                {active ? formatEta(eta) : run.status === 'SUCCEEDED' ? 'done' : run.status === 'PAUSED' ? 'paused: resume to continue' : 'stopped'}
              </Text>
            </Stat>
            <Stat label="Elapsed">
              <Text size="sm" fw={600}>
                {formatDuration((run.finishedAt ? Date.parse(run.finishedAt) : now) - Date.parse(run.startedAt))}
              </Text>
              <Text size="xs" c="dimmed">
                started <TimeAgo iso={run.startedAt} size="xs" />
              </Text>
            </Stat>
            <Stat label="Lease" testid="run-lease">
              <LeaseCountdown run={run} now={now} />
            </Stat>
            <Stat label="Checkpoint">
              <Text className="mono" data-testid="run-checkpoint">
                {run.checkpoint || '—'}
              </Text>
            </Stat>
            <Stat label="Started from">
              <Text className="mono" data-testid="run-start-checkpoint">
                {run.startCheckpoint || '(the beginning)'}
              </Text>
            </Stat>
          </SimpleGrid>
          {(run.message || run.stopReason) && (
            <Text size="sm" c={run.status === 'FAILED' ? 'red' : undefined} data-testid="run-message">
              {run.stopReason && <>Stopped: {stopReasonWords(run.stopReason)}. </>}
              {run.message}
            </Text>
          )}
        </Stack>
      </Card>

      <ShardGrid shards={run.shards} receivedAt={live?.receivedAt ?? now} now={now} />

      <RunTimeline runId={run.id} events={fetched.events} startedAt={run.startedAt} finishedAt={run.finishedAt} status={run.status} />
      <Grid>
        <Grid.Col span={{ base: 12, md: 4 }}>
          <Card withBorder radius="md" h="100%">
            <Title order={2} size="h4" mb="sm">
              Timeline
            </Title>
            <Timeline active={timeline.length - 1} bulletSize={16} lineWidth={2} data-testid="run-timeline">
              {timeline.map((t, i) => (
                <Timeline.Item key={`${t.title}-${i}`} title={t.title} color={t.color}>
                  <Text size="xs" c="dimmed">
                    <DateTime iso={t.at} size="xs" />
                  </Text>
                  {t.detail && <Text size="xs">{t.detail}</Text>}
                </Timeline.Item>
              ))}
            </Timeline>
          </Card>
        </Grid.Col>
        <Grid.Col span={{ base: 12, md: 8 }}>
          <Card withBorder radius="md">
            <Title order={2} size="h4" mb="sm">
              Ledger of this run
            </Title>
            <LedgerSummary summary={fetched.ledgerSummary} />
            <Text size="xs" c="dimmed" mt="xs" data-testid="ledger-counts-note">
              {ledgerCountsNote(fetched.ledgerSummary, run.progress, active)}
            </Text>
          </Card>
        </Grid.Col>
      </Grid>

      <Card withBorder radius="md">
        <Tabs defaultValue="errors" keepMounted={false}>
          <Tabs.List>
            <Tabs.Tab value="errors">Errors</Tabs.Tab>
            <Tabs.Tab value="ledger">Ledger</Tabs.Tab>
          </Tabs.List>
          <Tabs.Panel value="errors" pt="md">
            <RunErrors runId={run.id} refreshKey={refreshKey} />
          </Tabs.Panel>
          <Tabs.Panel value="ledger" pt="md">
            <LedgerTable jobName={run.jobName} runId={run.id} />
          </Tabs.Panel>
        </Tabs>
      </Card>
    </Stack>
  );
}
