// Replaying a run: choose a scope, read the preflight, request with a reason (and, for HIGH
// risk, a compensation reference). The request runs at once, waits for approval, or is blocked.
import { Alert, Anchor, Button, Card, Group, SegmentedControl, Stack, Text, Textarea, TextInput, Title } from '@mantine/core';
import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { useMutation, useQuery } from 'urql';

import { ownReplayRunning, ReplayPreflightQuery, RequestReplayMutation } from '../api/replays';
import { jobPath, runNumber, runPath } from '../api/runs';
import { ActionButton } from '../components/ActionButton';
import { ReplayStatusBadge, RiskBadge, RunStatusBadge } from '../components/Badges';
import { PreflightPanel } from '../components/PreflightPanel';
import { TargetLink } from '../components/TargetLink';
import { Empty, ErrorAlert, Loading, UserErrorList } from '../components/QueryState';
import type { ReplayRequestFieldsFragment, ReplayScope } from '../gql/graphql';
import { describeError, type UserErrorLike } from '../model/errors';
import { isActive } from '../model/status';

const SCOPES: { value: ReplayScope; label: string; description: string }[] = [
  { value: 'TRANSIENT', label: 'Transient', description: 'Retry TRANSIENT and NOT_APPLIED targets.' },
  { value: 'FAILED', label: 'Failed', description: 'Also retry VALIDATION_REJECTED, CONFLICT and POLICY_BLOCKED targets.' },
  { value: 'FULL', label: 'Full', description: 'Re-walk the whole generation; blocked while any target is AMBIGUOUS_EFFECT.' },
];

/** requestBlockedBy says why the request form cannot be sent, or null. */
export function requestBlockedBy(reason: string, compensationRef: string, highRisk: boolean, preflightBlocked: boolean): string | null {
  if (reason.trim() === '') return 'Give a reason for the replay.';
  if (highRisk && compensationRef.trim() === '') return 'A HIGH-risk replay needs a compensation reference (where the undo plan lives).';
  if (preflightBlocked) return 'The preflight blocks this replay: see the reasons above.';
  return null;
}

function Outcome({ req }: { req: ReplayRequestFieldsFragment }) {
  const color = req.status === 'BLOCKED' ? 'red' : req.status === 'PENDING_APPROVAL' ? 'yellow' : 'green';
  return (
    <Alert color={color} variant="light" title={<Group gap="xs">Replay request recorded <ReplayStatusBadge status={req.status} /></Group>} data-testid="replay-outcome" data-status={req.status}>
      {req.status === 'PENDING_APPROVAL' && (
        <Text size="sm">
          It waits in the{' '}
          <Anchor component={Link} to="/admin/replays">
            approval queue
          </Anchor>{' '}
          for an approver other than you ({req.requestedBy}).
        </Text>
      )}
      {req.status === 'BLOCKED' && (
        <Text size="sm">Blocked: {req.preflight.blockingReasons.join('; ')}</Text>
      )}
      {req.replayRun && (
        <Text size="sm">
          Replay run:{' '}
          <Anchor component={Link} to={runPath(req.replayRun.id)} data-testid="replay-run-link">
            #{runNumber(req.replayRun.id)}
          </Anchor>
        </Text>
      )}
    </Alert>
  );
}

export function ReplayPage() {
  const runId = useParams()['id'] ?? '';
  // A replay of selected targets (from a run's ledger): ?target=k1&target=k2.
  const [search] = useSearchParams();
  const selected = search.getAll('target');
  const targetKeys = selected.length > 0 ? selected : null;
  const [scope, setScope] = useState<ReplayScope>('TRANSIENT');
  const [reason, setReason] = useState('');
  const [compensationRef, setCompensationRef] = useState('');
  const [userErrors, setUserErrors] = useState<UserErrorLike[]>([]);
  const [outcome, setOutcome] = useState<ReplayRequestFieldsFragment | null>(null);
  const [sending, setSending] = useState(false);
  const [{ data, fetching, error }, refetch] = useQuery({ query: ReplayPreflightQuery, variables: { runId, scope, targetKeys }, requestPolicy: 'network-only' });
  const [requestState, request] = useMutation(RequestReplayMutation);

  const notFound = (
    <Empty
      title="No such run"
      description={`There is no run ${runNumber(runId)} to replay: it may have been pruned by retention, or the address is wrong.`}
      action={
        <Group mt="md">
          <Button component={Link} to="/admin">
            Go to the jobs
          </Button>
          <Button component={Link} to="/admin/replays" variant="default">
            Replay requests
          </Button>
        </Group>
      }
    />
  );
  if (error && !data) {
    const code = describeError(error).code;
    if (code === 'NOT_FOUND' || code === 'BAD_USER_INPUT') return <div data-testid="replay-not-found">{notFound}</div>;
    return <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />;
  }
  if (fetching && !data) return <Loading lines={8} label="Computing the preflight" />;
  const run = data?.run;
  const livePf = data?.replayPreflight;
  if (!run || !livePf) return <div data-testid="replay-not-found">{notFound}</div>;
  // Right after a request runs, the job's active run is the replay's own: show the preflight
  // the request was judged by, and say that a further replay waits for it.
  const own = ownReplayRunning(livePf, outcome?.id);
  const pf = own && outcome ? outcome.preflight : livePf;
  const highRisk = pf.riskLevel === 'HIGH';

  const send = async () => {
    setSending(true);
    setUserErrors([]);
    const res = await request({ input: { runId, scope, reason: reason.trim(), compensationRef: compensationRef.trim() || null, targetKeys } });
    setSending(false);
    const p = res.data?.requestReplay;
    if (p?.replayRequest) setOutcome(p.replayRequest);
    if (p?.userErrors.length) setUserErrors(p.userErrors);
    refetch({ requestPolicy: 'network-only' });
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
          /{' '}
          <Anchor component={Link} to={runPath(run.id)}>
            run #{runNumber(run.id)}
          </Anchor>{' '}
          /
        </Text>
        <Group gap="sm">
          <Title order={1} size="h2">
            Replay run #{runNumber(run.id)}
          </Title>
          <RunStatusBadge status={run.status} />
          <RiskBadge risk={run.job.riskLevel} />
        </Group>
        <Text size="sm" c="dimmed">
          A replay re-runs targets of generation {run.generation} under the same idempotency keys. Confirmed targets are never
          applied twice.
        </Text>
      </div>

      <Card withBorder radius="md">
        <Stack>
          <Group justify="space-between" align="center">
            <Title order={2} size="h4">
              Preflight
            </Title>
            <Button variant="subtle" size="xs" onClick={() => refetch({ requestPolicy: 'network-only' })} loading={fetching}>
              Recompute
            </Button>
          </Group>
          <div>
            <SegmentedControl
              value={scope}
              onChange={(v) => setScope(v as ReplayScope)}
              data={SCOPES.map((s) => ({ value: s.value, label: s.label }))}
              aria-label="Replay scope"
              data-testid="replay-scope"
            />
            <Text size="xs" c="dimmed" mt={4}>
              {SCOPES.find((s) => s.value === scope)?.description}
            </Text>
          </div>
          {error && <ErrorAlert error={error} />}
          {own && livePf.activeRun && (
            <Alert color="blue" variant="light" data-testid="own-replay-running">
              The replay you requested started as{' '}
              <Anchor component={Link} to={runPath(livePf.activeRun.id)}>
                run #{runNumber(livePf.activeRun.id)}
              </Anchor>
              . Below is the preflight it was requested with; a further replay waits until that run ends.
            </Alert>
          )}
          {targetKeys && (
            <Alert color="blue" variant="light" title={`Only ${targetKeys.length} selected target(s)`} data-testid="replay-selected-targets">
              <Stack gap={4}>
                <Group gap={6} wrap="wrap">
                  {targetKeys.map((k) => (
                    <TargetLink key={k} jobName={run.jobName} targetKey={k} />
                  ))}
                </Group>
                <Text size="xs">
                  The replay calls these again (those its scope retries) and leaves every other target as it is.{' '}
                  <Anchor component={Link} to={`${runPath(run.id)}/replay`}>
                    Replay the whole scope instead
                  </Anchor>
                </Text>
              </Stack>
            </Alert>
          )}
          <PreflightPanel pf={pf} />
        </Stack>
      </Card>

      <Card withBorder radius="md" component="form" onSubmit={(e: React.FormEvent) => { e.preventDefault(); void send(); }} aria-label="Request a replay">
        <Stack>
          <Title order={2} size="h4">
            Request
          </Title>
          {isActive(run.status) && (
            <Alert color="blue" variant="light">
              The run is still active: a replay can be requested once it has ended.
            </Alert>
          )}
          <Textarea
            label="Reason"
            description="Why replay, for the approver and the audit log"
            placeholder="e.g. provider outage 10:02–10:09 left 14 payments TRANSIENT"
            value={reason}
            onChange={(e) => setReason(e.currentTarget.value)}
            autosize
            minRows={2}
            required
            data-testid="replay-reason"
          />
          <TextInput
            label="Compensation reference"
            description={highRisk ? 'Required for HIGH-risk jobs: where the plan to undo this replay lives (ticket, runbook)' : 'Optional: where the plan to undo this replay lives'}
            placeholder="e.g. OPS-1234"
            value={compensationRef}
            onChange={(e) => setCompensationRef(e.currentTarget.value)}
            required={highRisk}
            data-testid="replay-compensation"
          />
          <UserErrorList errors={userErrors} />
          {requestState.error && <ErrorAlert error={requestState.error} />}
          {outcome && <Outcome req={outcome} />}
          <Group>
            <ActionButton
              need="OPERATOR"
              type="submit"
              blockedBy={own ? 'The replay you requested is running: a further one waits for it to end.' : requestBlockedBy(reason, compensationRef, highRisk, pf.blocked)}
              loading={sending}
              data-testid="replay-request"
            >
              {pf.requiresApproval ? 'Request approval' : 'Replay now'}
            </ActionButton>
          </Group>
        </Stack>
      </Card>
    </Stack>
  );
}
