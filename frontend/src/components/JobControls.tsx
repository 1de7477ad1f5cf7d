// The run and job controls: Resume (or Start), Restart, Cancel, Pause / Resume job. Each is
// disabled with a reason when the role or the state forbids it.
import { Button, Group, Modal, Stack, Text, Tooltip } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { IconPlayerPause, IconPlayerPlay, IconPlayerStop, IconRefresh } from '@tabler/icons-react';
import { useState } from 'react';
import { useMutation } from 'urql';

import { PauseJobMutation, ResumeJobMutation, StartJobMutation } from '../api/jobs';
import { CancelRunMutation, runNumber, type RunSummary } from '../api/runs';
import type { RunMode } from '../gql/graphql';
import { ActionButton } from './ActionButton';
import { useMaintenance } from './Layout';
import { report } from './report';

/** startBlockedBy says why no run can start now, or null. */
export function startBlockedBy(job: { paused: boolean }, active: RunSummary | null, maintenance: boolean | null): string | null {
  if (maintenance) return 'Maintenance is on: no run starts until it is lifted.';
  if (job.paused) return 'The job is paused: resume the job first.';
  if (active) return `Run #${runNumber(active.id)} is still active: cancel it or wait for it to finish.`;
  return null;
}

/** cancelBlockedBy says why the active run cannot be cancelled, or null. */
export function cancelBlockedBy(active: RunSummary | null): string | null {
  if (!active) return 'No run is active.';
  if (active.cancelRequested) return 'Cancelling: the run stops at its next item boundary.';
  return null;
}

export function RestartConfirm({ job, opened, onClose, onConfirm }: { job: string; opened: boolean; onClose: () => void; onConfirm: () => void }) {
  return (
    <Modal opened={opened} onClose={onClose} title={`Restart ${job}?`}>
      <Stack>
        <Text size="sm">
          A restart opens a <b>new ledger generation</b>: it does not continue from the checkpoint, and every target is
          processed again under new idempotency keys. Use Resume to continue where the last run stopped.
        </Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={onClose}>
            Keep the checkpoint
          </Button>
          <Button color="orange" onClick={onConfirm} data-testid="restart-confirm">
            Restart from scratch
          </Button>
        </Group>
      </Stack>
    </Modal>
  );
}

export interface JobControlsProps {
  job: { name: string; paused: boolean };
  active: RunSummary | null;
  hasRun: boolean;
  /** Called with a run a control started or changed. */
  onRun?: (r: RunSummary) => void;
  size?: 'xs' | 'sm';
}

export function JobControls({ job, active, hasRun, onRun, size = 'xs' }: JobControlsProps) {
  const { on: maintenance } = useMaintenance();
  const [, startJob] = useMutation(StartJobMutation);
  const [, cancelRun] = useMutation(CancelRunMutation);
  const [, pauseJob] = useMutation(PauseJobMutation);
  const [, resumeJob] = useMutation(ResumeJobMutation);
  const [busy, setBusy] = useState<string | null>(null);
  const [restartOpened, restart] = useDisclosure(false);

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
  const testid = (s: string) => `${s}-${job.name}`;
  const icon = size === 'xs' ? 14 : 16;

  return (
    <Group gap="xs">
      <Tooltip label="Start a run that continues from the last checkpoint" withArrow openDelay={400} disabled={blocked !== null}>
        <span>
          <ActionButton
            need="OPERATOR"
            blockedBy={blocked}
            size={size}
            leftSection={<IconPlayerPlay size={icon} />}
            loading={busy === 'RESUME'}
            onClick={() => void start('RESUME')}
            data-testid={testid('resume')}
          >
            {hasRun ? 'Resume' : 'Start'}
          </ActionButton>
        </span>
      </Tooltip>
      <ActionButton
        need="OPERATOR"
        blockedBy={blocked}
        size={size}
        variant="light"
        color="orange"
        leftSection={<IconRefresh size={icon} />}
        loading={busy === 'RESTART'}
        onClick={restart.open}
        data-testid={testid('restart')}
      >
        Restart
      </ActionButton>
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
          Resume job
        </ActionButton>
      ) : (
        <ActionButton
          need="OPERATOR"
          size={size}
          variant="light"
          color="yellow"
          leftSection={<IconPlayerPause size={icon} />}
          loading={busy === 'pause'}
          onClick={() =>
            void act('pause', async () => {
              report(await pauseJob({ name: job.name }), (d) => d.pauseJob, `${job.name}: paused`);
            })
          }
          data-testid={testid('pause')}
        >
          Pause
        </ActionButton>
      )}
      <RestartConfirm
        job={job.name}
        opened={restartOpened}
        onClose={restart.close}
        onConfirm={() => {
          restart.close();
          void start('RESTART');
        }}
      />
    </Group>
  );
}
