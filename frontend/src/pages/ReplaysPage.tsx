// Replay requests and the approval queue: approvers approve or reject with a note; nobody can
// decide their own request. A gated RESTART waits here too, as a request of kind RESTART. An
// approved request whose run could not start (the job paused, no free slot) is executed here. A
// request judged again and reopened says why it needs approval again.
import { Accordion, Anchor, Badge, Card, Chip, Code, Group, Stack, Text, Textarea, Title } from '@mantine/core';
import { useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useMutation, useQuery } from 'urql';

import { ApproveReplayMutation, ExecuteReplayMutation, RejectReplayMutation, ReplayRequestQuery, ReplayRequestsQuery } from '../api/replays';
import { jobPath, runNumber, runPath } from '../api/runs';
import { useViewer } from '../auth/AuthContext';
import { ActionButton } from '../components/ActionButton';
import { ReplayStatusBadge, RiskBadge } from '../components/Badges';
import { Pager } from '../components/Pager';
import { PreflightPanel } from '../components/PreflightPanel';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { report } from '../components/report';
import { TimeAgo } from '../components/Time';
import type { ReplayRequestFieldsFragment, ReplayStatus } from '../gql/graphql';
import { useCursorPager } from '../hooks/useCursorPager';
import { replayStatusMeta } from '../model/status';

const STATUSES: ReplayStatus[] = ['PENDING_APPROVAL', 'APPROVED', 'EXECUTED', 'REJECTED', 'BLOCKED'];

/** decisionBlockedBy says why the viewer cannot decide a request, or null. */
export function decisionBlockedBy(req: { status: ReplayStatus; requestedBy: string }, viewerName: string): string | null {
  if (req.status !== 'PENDING_APPROVAL') return `The request is ${replayStatusMeta(req.status).label.toLowerCase()}: it was decided already.`;
  if (req.requestedBy === viewerName) return 'You requested this: a second person must approve or reject it.';
  return null;
}

/**
 * executeBlockedBy says why the viewer cannot execute a request, or null: only an APPROVED
 * request without a run (its start failed at approval) is executed by hand.
 */
export function executeBlockedBy(req: { status: ReplayStatus; replayRun: unknown; claimedUntil?: string | null }, now: Date = new Date()): string | null {
  if (req.status !== 'APPROVED') return 'Only an approved request whose run did not start can be executed.';
  if (req.replayRun) return 'Its run has started already.';
  if (req.claimedUntil && new Date(req.claimedUntil) > now) return 'Another execute is starting its run; if that fails, it can be executed again.';
  return null;
}

export function RequestCard({ req, onDecided }: { req: ReplayRequestFieldsFragment; onDecided: () => void }) {
  const viewer = useViewer();
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const [, approve] = useMutation(ApproveReplayMutation);
  const [, reject] = useMutation(RejectReplayMutation);
  const [, execute] = useMutation(ExecuteReplayMutation);
  const blocked = decisionBlockedBy(req, viewer.name);
  const pending = req.status === 'PENDING_APPROVAL';
  const restart = req.kind === 'RESTART';
  const schedule = req.kind === 'SCHEDULE';
  const what = schedule ? 'Schedule change' : restart ? 'Restart' : 'Replay';
  const started = schedule ? 'it is applied' : 'its run is starting';

  const decide = async (action: 'approve' | 'reject' | 'execute') => {
    setBusy(action);
    if (action === 'approve') {
      report(await approve({ requestId: req.id, note: note.trim() || null }), (d) => d.approveReplay, `${what} approved: ${started}`);
    } else if (action === 'reject') {
      report(await reject({ requestId: req.id, note: note.trim() || null }), (d) => d.rejectReplay, `${what} rejected`);
    } else {
      report(await execute({ requestId: req.id }), (d) => d.executeReplay, `${what} executed: ${started}`);
    }
    setBusy(null);
    onDecided();
  };

  return (
    <Card withBorder radius="md" data-testid="replay-request-card" data-status={req.status} data-kind={req.kind} data-requested-by={req.requestedBy}>
      <Stack gap="xs">
        <Group justify="space-between">
          <Group gap="xs">
            <Anchor component={Link} to={jobPath(req.job.name)} fw={700}>
              {req.job.name}
            </Anchor>
            <RiskBadge risk={req.job.riskLevel} />
            <ReplayStatusBadge status={req.status} />
            {restart && (
              <Badge color="orange" variant="light" data-testid="replay-kind-restart">
                RESTART
              </Badge>
            )}
            {schedule && (
              <Badge color="orange" variant="light" data-testid="replay-kind-schedule">
                SCHEDULE
              </Badge>
            )}
            <Text size="sm" c="dimmed">
              {schedule
                ? `schedule change: each fire starts a run nobody starts by hand`
                : restart
                  ? `restart into generation ${req.generation + 1}`
                  : `scope ${req.scope}`} · generation {req.generation} · source{' '}
              <Anchor component={Link} to={runPath(req.sourceRun.id)}>
                run #{runNumber(req.sourceRun.id)}
              </Anchor>
            </Text>
          </Group>
          <Text size="xs" c="dimmed">
            requested by <b>{req.requestedBy}</b> <TimeAgo iso={req.createdAt} size="xs" />
          </Text>
        </Group>
        {req.scheduleChange && (
          <Text size="sm" data-testid="schedule-change">
            <b>Change:</b>
            {req.scheduleChange.cron != null && (
              <>
                {' '}cron <Code>{req.scheduleChange.cron || '(manual only)'}</Code>
              </>
            )}
            {req.scheduleChange.timezone != null && ` · time zone ${req.scheduleChange.timezone}`}
            {req.scheduleChange.enabled != null && ` · ${req.scheduleChange.enabled ? 'enabled' : 'disabled'}`}
            {req.scheduleChange.leaseSeconds != null && ` · lease ${req.scheduleChange.leaseSeconds || 'default'} s`}
          </Text>
        )}
        <Text size="sm">
          <b>Reason:</b> {req.reason}
        </Text>
        {req.reopenReason && (
          <Text size="sm" c="orange" data-testid="replay-reopen-reason">
            <b>Needs approval again:</b> {req.reopenReason}
          </Text>
        )}
        <Text size="sm">
          <b>Compensation:</b> {req.compensationRef ? <Code>{req.compensationRef}</Code> : <Text span c="dimmed">none given</Text>}
        </Text>
        {req.decidedBy && (
          <Text size="sm">
            <b>{req.status === 'REJECTED' ? 'Rejected' : 'Decided'} by</b> {req.decidedBy} <TimeAgo iso={req.decidedAt} size="sm" />
            {req.decisionNote ? ` — “${req.decisionNote}”` : ''}
          </Text>
        )}
        {req.replayRun && (
          <Text size="sm">
            <b>{restart ? 'Restart run' : 'Replay run'}:</b>{' '}
            <Anchor component={Link} to={runPath(req.replayRun.id)} data-testid="replay-run-link">
              #{runNumber(req.replayRun.id)}
            </Anchor>{' '}
            ({req.replayRun.status.toLowerCase()})
          </Text>
        )}
        <Accordion variant="contained" chevronPosition="left">
          <Accordion.Item value="preflight">
            <Accordion.Control>
              Preflight at request time: {req.preflight.targetsInScope} target(s) {restart ? 'called again' : 'in scope'}
              {req.preflight.blocked ? ', blocked' : req.preflight.requiresApproval ? ', needs approval' : ''}
            </Accordion.Control>
            <Accordion.Panel>
              <PreflightPanel pf={req.preflight} />
            </Accordion.Panel>
          </Accordion.Item>
        </Accordion>
        {req.status === 'APPROVED' && !req.replayRun && (
          <Group>
            <Text size="sm" c="dimmed" style={{ flex: 1 }}>
              Approved, but its run did not start (the job was paused or busy, or no slot was free). Execute it once the job can run.
            </Text>
            <ActionButton need="APPROVER" blockedBy={executeBlockedBy(req)} color="green" loading={busy === 'execute'} onClick={() => void decide('execute')} data-testid="replay-execute">
              Execute
            </ActionButton>
          </Group>
        )}
        {pending && (
          <Group align="flex-end">
            <Textarea
              label="Note"
              placeholder="what you checked"
              value={note}
              onChange={(e) => setNote(e.currentTarget.value)}
              autosize
              minRows={1}
              style={{ flex: 1 }}
              data-testid="decision-note"
            />
            <ActionButton need="APPROVER" blockedBy={blocked} color="green" loading={busy === 'approve'} onClick={() => void decide('approve')} data-testid="replay-approve">
              Approve
            </ActionButton>
            <ActionButton need="APPROVER" blockedBy={blocked} color="red" variant="light" loading={busy === 'reject'} onClick={() => void decide('reject')} data-testid="replay-reject">
              Reject
            </ActionButton>
          </Group>
        )}
      </Stack>
    </Card>
  );
}

/** OneRequest shows the request a run links to (`?request=<id>`), whatever its status. */
function OneRequest({ id }: { id: string }) {
  const [{ data, fetching, error }, refetch] = useQuery({ query: ReplayRequestQuery, variables: { id }, requestPolicy: 'cache-and-network' });
  const refresh = () => refetch({ requestPolicy: 'network-only' });
  const node = data?.node;
  const req = node && 'status' in node ? (node as ReplayRequestFieldsFragment) : null;
  return (
    <Stack>
      <Anchor component={Link} to="/admin/replays" size="sm" data-testid="replays-all-link">
        ← every replay request
      </Anchor>
      {error && <ErrorAlert error={error} onRetry={refresh} />}
      {fetching && !data && <Loading lines={4} label="Loading the replay request" />}
      {data && !req && <Empty title="No such replay request" description={`There is no replay request with id ${id}.`} />}
      {req && <RequestCard req={req} onDecided={refresh} />}
    </Stack>
  );
}

export function ReplaysPage() {
  const [params] = useSearchParams();
  const one = params.get('request');
  return one ? <OneRequest id={one} /> : <ReplayRequestList />;
}

function ReplayRequestList() {
  const [statuses, setStatuses] = useState<ReplayStatus[]>(['PENDING_APPROVAL']);
  const pager = useCursorPager();
  const { reset } = pager;
  useEffect(() => reset(), [statuses, reset]);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: ReplayRequestsQuery,
    variables: { status: statuses.length ? statuses : null, first: 20, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  const conn = data?.replayRequests;
  const refresh = () => refetch({ requestPolicy: 'network-only' });

  return (
    <Stack>
      <div>
        <Title order={1} size="h2">
          Replays
        </Title>
        <Text c="dimmed" size="sm">
          Four eyes: a replay or restart that needs approval waits here until an approver other than its requester decides.
        </Text>
      </div>
      <Chip.Group multiple value={statuses} onChange={(v) => setStatuses(v as ReplayStatus[])}>
        <Group gap={6} role="group" aria-label="Filter requests by status">
          {STATUSES.map((s) => (
            <Chip key={s} value={s} size="sm" color={replayStatusMeta(s).color} wrapperProps={{ 'data-testid': `replays-filter-${s}` }}>
              {replayStatusMeta(s).label}
            </Chip>
          ))}
        </Group>
      </Chip.Group>
      {error && <ErrorAlert error={error} onRetry={refresh} />}
      {fetching && !conn && <Loading lines={6} label="Loading replay requests" />}
      {conn && conn.nodes.length === 0 && (
        <Empty
          title={statuses.length === 1 && statuses[0] === 'PENDING_APPROVAL' ? 'Nothing waits for approval' : 'No replay requests'}
          description="Replays are requested from a run's page (Replay…)."
        />
      )}
      {conn?.nodes.map((r) => (
        <RequestCard key={r.id} req={r} onDecided={refresh} />
      ))}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="replays" />}
    </Stack>
  );
}
