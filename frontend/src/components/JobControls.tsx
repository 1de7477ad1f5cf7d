// The run and job controls: Resume run (or Start), Restart, Cancel, Pause job (after a
// confirmation) / Unpause job. Each is disabled with a reason when the role or the state forbids
// it. Restart shows its preflight first: a RESTART the gate holds becomes a request for
// approval, or says what blocks it.
import { Alert, Anchor, Button, Group, List, Modal, Stack, Text, Textarea, TextInput, Tooltip } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { notifications } from '@mantine/notifications';
import { IconPlayerPause, IconPlayerPlay, IconPlayerStop, IconRefresh } from '@tabler/icons-react';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { useMutation, useQuery } from 'urql';

import { PauseJobMutation, ResumeJobMutation, StartJobMutation } from '../api/jobs';
import { RequestRestartMutation, RestartPreflightQuery } from '../api/replays';
import { CancelRunMutation, runNumber, type RunSummary } from '../api/runs';
import type { RiskLevel, RunMode, RunStatus } from '../gql/graphql';
import type { UserErrorLike } from '../model/errors';
import { ActionButton } from './ActionButton';
import { useMaintenance } from './Layout';
import { ErrorAlert, Loading, UserErrorList } from './QueryState';
import { report } from './report';

/** startBlockedBy says why no run can start now, or null. */
export function startBlockedBy(job: { paused: boolean }, active: RunSummary | null, maintenance: boolean | null): string | null {
  if (maintenance) return 'Maintenance is on: no run starts until it is lifted.';
  if (job.paused) return 'The job is paused: resume the job first.';
  if (active) return `Run #${runNumber(active.id)} is still active: cancel it or wait for it to finish.`;
  return null;
}

/**
 * generationDone says why Resume has nothing to do, or null: the job's last run SUCCEEDED and
 * each of its fires is a new generation (scheduledMode RESTART), so the generation it finished
 * has no item left after its checkpoint. A RESUME then would be a run of 0 items that
 * "succeeds" at once; Run again (a RESTART, through its preflight and gate) is what applies.
 * A job that continues one walk fire after fire (scheduledMode RESUME) may always resume: new
 * items may have come after the checkpoint.
 */
export function generationDone(
  job: { scheduledMode?: RunMode },
  last: { id: string; status: RunStatus; generation?: number } | null | undefined,
): string | null {
  if (!last || last.status !== 'SUCCEEDED' || job.scheduledMode === 'RESUME') return null;
  const gen = last.generation !== undefined ? `generation ${last.generation}` : 'its generation';
  return `Run #${runNumber(last.id)} finished ${gen}: nothing is left to resume. Run again starts a new generation.`;
}

/** cancelBlockedBy says why the active run cannot be cancelled, or null. */
export function cancelBlockedBy(active: RunSummary | null): string | null {
  if (!active) return 'No run is active.';
  if (active.cancelRequested) return 'Cancelling: the run stops at its next item boundary.';
  return null;
}

/** restartGated says whether a RESTART preflight holds the RESTART for a request, and why. */
export function restartGated(pf: { blocked: boolean; requiresApproval: boolean } | null | undefined): 'blocked' | 'approval' | null {
  if (!pf) return null;
  if (pf.blocked) return 'blocked';
  if (pf.requiresApproval) return 'approval';
  return null;
}

/** restartHint says what Restart will do, before its preflight is read. */
export function restartHint(riskLevel: RiskLevel | undefined, hasRun: boolean): string {
  if (riskLevel === 'HIGH' && hasRun)
    return 'Start a new generation: every target again, under new keys. HIGH risk: the restart is requested and runs once another approver approves it.';
  return 'Start a new generation: every target again, under new keys. Targets in doubt block it until they are settled.';
}

/** restartRequestBlockedBy says why a RESTART request cannot be sent yet, or null. */
export function restartRequestBlockedBy(reason: string, compensationRef: string, highRisk: boolean): string | null {
  if (reason.trim() === '') return 'Give a reason for the restart.';
  if (highRisk && compensationRef.trim() === '') return 'A HIGH-risk restart needs a compensation reference (where the undo plan lives).';
  return null;
}

/**
 * RestartConfirm asks before a RESTART, after its preflight: a clean job restarts at once; a
 * HIGH-risk job's RESTART becomes a request for a second person's approval; while targets of
 * the current generation are in doubt it is blocked, and says how to settle them.
 */
export function RestartConfirm({
  job,
  opened,
  onClose,
  onConfirm,
  onRun,
}: {
  job: string;
  opened: boolean;
  onClose: () => void;
  onConfirm: () => void;
  onRun?: (r: RunSummary) => void;
}) {
  const navigate = useNavigate();
  const [{ data, fetching, error }] = useQuery({ query: RestartPreflightQuery, variables: { name: job }, pause: !opened, requestPolicy: 'network-only' });
  const [reason, setReason] = useState('');
  const [compensationRef, setCompensationRef] = useState('');
  const [userErrors, setUserErrors] = useState<UserErrorLike[]>([]);
  const [sending, setSending] = useState(false);
  const [, requestRestart] = useMutation(RequestRestartMutation);
  const pf = data?.restartPreflight;
  const gate = restartGated(pf);
  const highRisk = pf?.riskLevel === 'HIGH';

  const send = async () => {
    setSending(true);
    setUserErrors([]);
    const res = await requestRestart({ input: { name: job, reason: reason.trim(), compensationRef: compensationRef.trim() || null } });
    setSending(false);
    const p = res.data?.requestRestart;
    if (res.error) {
      report(res, (d) => d.requestRestart, null);
      return;
    }
    if (p?.userErrors.length) {
      setUserErrors(p.userErrors);
      return;
    }
    onClose();
    if (p?.run) {
      notifications.show({ color: 'green', message: `${job}: restarted` });
      onRun?.(p.run);
    } else {
      notifications.show({ color: 'yellow', message: `${job}: RESTART requested; it waits for an approver other than you` });
      void navigate('/admin/replays');
    }
  };

  return (
    <Modal opened={opened} onClose={onClose} title={`Restart ${job}?`} size={gate ? 'lg' : 'md'}>
      <Stack>
        <Text size="sm">
          A restart opens a <b>new ledger generation</b>: it does not continue from the checkpoint, and every target is
          processed again under new idempotency keys. Use Resume to continue where the last run stopped.
        </Text>
        {fetching && !data && <Loading lines={2} label="Computing the restart preflight" />}
        {error && <ErrorAlert error={error} />}
        {gate === 'blocked' && pf && (
          <Alert color="red" variant="light" title="This restart is blocked" data-testid="restart-blocked">
            <Stack gap={4}>
              <List size="sm">
                {pf.blockingReasons.map((r) => (
                  <List.Item key={r}>{r}</List.Item>
                ))}
              </List>
              {pf.ambiguous + pf.inFlight > 0 && (
                <Text size="sm">
                  Settle the targets in doubt first, on the{' '}
                  <Anchor component={Link} to="/admin/ambiguous" onClick={onClose}>
                    ambiguous effects page
                  </Anchor>{' '}
                  (reconcile, or resolve by hand), then restart again.
                </Text>
              )}
            </Stack>
          </Alert>
        )}
        {gate === 'approval' && pf && (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void send();
            }}
            aria-label="Request a restart"
          >
            <Stack>
              <Alert color="yellow" variant="light" title="This restart needs a second person's approval" data-testid="restart-needs-approval">
                <List size="sm">
                  {pf.approvalReasons.map((r) => (
                    <List.Item key={r}>{r}</List.Item>
                  ))}
                </List>
                <Text size="sm" mt={4}>
                  Generation {pf.generation} has {pf.confirmed} confirmed effect(s) that a restart makes again. Request it: it
                  waits in the approval queue, and runs once an approver other than you approves it.
                </Text>
              </Alert>
              <Textarea
                label="Reason"
                description="Why restart, for the approver and the audit log"
                value={reason}
                onChange={(e) => setReason(e.currentTarget.value)}
                autosize
                minRows={2}
                required
                data-testid="restart-reason"
              />
              <TextInput
                label="Compensation reference"
                description={highRisk ? 'Required for HIGH-risk jobs: where the plan to undo the repeated effects lives' : 'Optional'}
                value={compensationRef}
                onChange={(e) => setCompensationRef(e.currentTarget.value)}
                required={highRisk}
                data-testid="restart-compensation"
              />
              <UserErrorList errors={userErrors} />
              <Group justify="flex-end">
                <Button variant="default" onClick={onClose}>
                  Keep the checkpoint
                </Button>
                <ActionButton
                  need="OPERATOR"
                  type="submit"
                  color="orange"
                  blockedBy={restartRequestBlockedBy(reason, compensationRef, highRisk)}
                  loading={sending}
                  data-testid="restart-request"
                >
                  Request restart
                </ActionButton>
              </Group>
            </Stack>
          </form>
        )}
        {gate === null && !(fetching && !data) && (
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Keep the checkpoint
            </Button>
            <Button color="orange" onClick={onConfirm} data-testid="restart-confirm">
              Restart from scratch
            </Button>
          </Group>
        )}
        {gate === 'blocked' && (
          <Group justify="flex-end">
            <Button variant="default" onClick={onClose}>
              Close
            </Button>
          </Group>
        )}
      </Stack>
    </Modal>
  );
}

export interface JobControlsProps {
  /** riskLevel, when given, lets Restart say up front that a HIGH-risk RESTART needs approval. */
  job: { name: string; paused: boolean; riskLevel?: RiskLevel; scheduledMode?: RunMode };
  active: RunSummary | null;
  hasRun: boolean;
  /** The job's most recent run: after one that finished its generation, Run again replaces Resume. */
  last?: { id: string; status: RunStatus; generation?: number } | null;
  /** Called with a run a control started or changed. */
  onRun?: (r: RunSummary) => void;
  size?: 'xs' | 'sm';
}

export function JobControls({ job, active, hasRun, last, onRun, size = 'xs' }: JobControlsProps) {
  const { on: maintenance } = useMaintenance();
  const [, startJob] = useMutation(StartJobMutation);
  const [, cancelRun] = useMutation(CancelRunMutation);
  const [, pauseJob] = useMutation(PauseJobMutation);
  const [, resumeJob] = useMutation(ResumeJobMutation);
  const [busy, setBusy] = useState<string | null>(null);
  const [restartOpened, restart] = useDisclosure(false);
  const [pauseOpened, pauseConfirm] = useDisclosure(false);

  const act = async (what: string, fn: () => Promise<void>) => {
    setBusy(what);
    try {
      await fn();
    } finally {
      setBusy(null);
    }
  };
  const start = (mode: RunMode) =>
    act(mode, async () => {
      const p = report(await startJob({ name: job.name, mode }), (d) => d.startJob, `${job.name}: ${mode === 'RESTART' ? 'restarted' : 'started'}`);
      if (p?.run) onRun?.(p.run);
    });
  const blocked = startBlockedBy(job, active, maintenance);
  // After a run that finished its generation, Resume has nothing to do: Run again (a RESTART)
  // becomes the main action, and Resume says why it is off.
  const done = active ? null : generationDone(job, last);
  const testid = (s: string) => `${s}-${job.name}`;
  const icon = size === 'xs' ? 14 : 16;

  return (
    <Group gap="xs">
      {/* While the job is paused, Unpause job is what applies: no run Resume beside it. */}
      {!job.paused && (
        <Tooltip label="Start a run that continues from the last checkpoint" withArrow openDelay={400} disabled={(blocked ?? done) !== null}>
          <span>
            <ActionButton
              need="OPERATOR"
              blockedBy={blocked ?? done}
              size={size}
              variant={done ? 'default' : 'filled'}
              leftSection={<IconPlayerPlay size={icon} />}
              loading={busy === 'RESUME'}
              onClick={() => void start('RESUME')}
              data-testid={testid('resume')}
            >
              {hasRun ? 'Resume run' : 'Start'}
            </ActionButton>
          </span>
        </Tooltip>
      )}
      <Tooltip label={restartHint(job.riskLevel, hasRun)} withArrow openDelay={400} disabled={blocked !== null} multiline w={260}>
        <span>
          <ActionButton
            need="OPERATOR"
            blockedBy={blocked}
            size={size}
            variant={done ? 'filled' : 'light'}
            color="orange"
            leftSection={<IconRefresh size={icon} />}
            loading={busy === 'RESTART'}
            onClick={restart.open}
            data-testid={testid('restart')}
            data-run-again={done ? 'true' : undefined}
            data-needs-approval={job.riskLevel === 'HIGH' && hasRun ? 'true' : undefined}
          >
            {done ? 'Run again' : 'Restart'}
          </ActionButton>
        </span>
      </Tooltip>
      <ActionButton
        need="OPERATOR"
        blockedBy={cancelBlockedBy(active)}
        size={size}
        variant="light"
        color="red"
        leftSection={<IconPlayerStop size={icon} />}
        loading={busy === 'cancel'}
        onClick={() =>
          active &&
          void act('cancel', async () => {
            const p = report(await cancelRun({ runId: active.id }), (d) => d.cancelRun, `Run #${runNumber(active.id)}: cancel requested`);
            if (p?.run) onRun?.(p.run);
          })
        }
        data-testid={testid('cancel')}
      >
        Cancel
      </ActionButton>
      {job.paused ? (
        <ActionButton
          need="OPERATOR"
          size={size}
          variant="light"
          color="teal"
          leftSection={<IconPlayerPlay size={icon} />}
          loading={busy === 'resume-job'}
          onClick={() =>
            void act('resume-job', async () => {
              const p = report(await resumeJob({ name: job.name }), (d) => d.resumeJob, `${job.name}: resumed`);
              if (p?.run) onRun?.(p.run);
            })
          }
          data-testid={testid('resume-job')}
        >
          Unpause job
        </ActionButton>
      ) : (
        <ActionButton
          need="OPERATOR"
          size={size}
          variant="light"
          color="yellow"
          leftSection={<IconPlayerPause size={icon} />}
          loading={busy === 'pause'}
          onClick={pauseConfirm.open}
          data-testid={testid('pause')}
        >
          Pause job
        </ActionButton>
      )}
      <Modal opened={pauseOpened} onClose={pauseConfirm.close} title={`Pause ${job.name}?`}>
        <Stack>
          <Text size="sm">
            {active ? `Run #${runNumber(active.id)} stops at its next item boundary and ends PAUSED; committed items stay. ` : ''}
            No run of this job starts while it is paused — scheduled or manual. The schedule is kept: Unpause job lets it fire
            again and resumes a paused run.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={pauseConfirm.close}>
              Keep running
            </Button>
            <Button
              color="yellow"
              data-testid={testid('pause-confirm')}
              onClick={() => {
                pauseConfirm.close();
                void act('pause', async () => {
                  report(await pauseJob({ name: job.name }), (d) => d.pauseJob, `${job.name}: paused`);
                });
              }}
            >
              Pause job
            </Button>
          </Group>
        </Stack>
      </Modal>
      <RestartConfirm
        job={job.name}
        opened={restartOpened}
        onClose={restart.close}
        onRun={onRun}
        onConfirm={() => {
          restart.close();
          void start('RESTART');
        }}
      />
    </Group>
  );
}
