// The schedule editor: cron with its words and the next 5 fire times as one types (the API's
// cronPreview validates), a time zone picker, enabled and the lease override.
import { Alert, Anchor, Button, Code, Group, List, NumberInput, Select, Stack, Switch, Text, TextInput } from '@mantine/core';
import { Link } from 'react-router';
import { useMemo, useState, type ReactNode } from 'react';
import { useMutation, useQuery } from 'urql';

import { CronPreviewQuery, UpdateJobScheduleMutation } from '../api/jobs';
import { runNumber } from '../api/runs';
import type { UpdateJobScheduleInput } from '../gql/graphql';
import { useDebounced } from '../hooks/useDebounced';
import { cronInWords } from '../model/cron';
import { userErrorWords, type UserErrorLike } from '../model/errors';
import { formatDateTime, timeZones } from '../model/time';
import { ActionButton } from './ActionButton';
import { UserErrorList } from './QueryState';
import { report } from './report';

export interface ScheduleJob {
  name: string;
  cron: string;
  timezone: string;
  enabled: boolean;
  leaseSeconds?: number | null | undefined;
}

/** scheduleChanges is the update input with only the fields that differ from the job. */
export function scheduleChanges(job: ScheduleJob, cron: string, timezone: string, enabled: boolean, lease: number | null): UpdateJobScheduleInput | null {
  const input: UpdateJobScheduleInput = { name: job.name };
  let changed = false;
  if (cron.trim() !== job.cron) {
    input.cron = cron.trim();
    changed = true;
  }
  if (timezone !== job.timezone) {
    input.timezone = timezone;
    changed = true;
  }
  if (enabled !== job.enabled) {
    input.enabled = enabled;
    changed = true;
  }
  if ((lease ?? null) !== (job.leaseSeconds ?? null)) {
    input.leaseSeconds = lease ?? 0;
    changed = true;
  }
  return changed ? input : null;
}

/** The lease override's range, in seconds, as the API takes it. */
export const MIN_LEASE_SECONDS = 1;
export const MAX_LEASE_SECONDS = 86400;

/**
 * leaseInputError is the refusal of what the lease box holds, in the API's words (INVALID_INPUT
 * on leaseSeconds, naming the range), or null when it is a lease the API takes or empty (which
 * clears the override). Nothing is clamped: an out-of-range value is shown as typed, refused.
 */
export function leaseInputError(value: number | string): UserErrorLike | null {
  if (value === '') return null;
  const n = typeof value === 'number' ? value : Number(value);
  if (Number.isInteger(n) && n >= MIN_LEASE_SECONDS && n <= MAX_LEASE_SECONDS) return null;
  return {
    code: 'INVALID_INPUT',
    field: 'leaseSeconds',
    message: `leaseSeconds must be a whole number between ${MIN_LEASE_SECONDS} and ${MAX_LEASE_SECONDS} (empty clears the override), not ${String(value)}`,
  };
}

/** fieldError renders a user error under its field: the code in words, the code, the server's detail. */
function fieldError(e: UserErrorLike | undefined): ReactNode {
  if (!e) return undefined;
  return (
    <>
      {userErrorWords(e.code)} <Code fz="xs">{e.code}</Code> {e.message}
    </>
  );
}

export function ScheduleEditor({ job, onSaved }: { job: ScheduleJob; onSaved: () => void }) {
  const [cron, setCron] = useState(job.cron);
  const [tz, setTz] = useState(job.timezone || 'UTC');
  const [enabled, setEnabled] = useState(job.enabled);
  const [leaseText, setLeaseText] = useState<number | string>(job.leaseSeconds ?? '');
  const leaseError = leaseInputError(leaseText);
  const lease = leaseText === '' || leaseError ? null : Number(leaseText);
  const [saveErrors, setSaveErrors] = useState<UserErrorLike[]>([]);
  const [requested, setRequested] = useState<{ id: string; status: string } | null>(null);
  const [saving, setSaving] = useState(false);
  const [, update] = useMutation(UpdateJobScheduleMutation);

  const zones = useMemo(() => {
    const z = timeZones();
    return z.includes(tz) ? z : [tz, ...z];
  }, [tz]);

  const dCron = useDebounced(cron.trim(), 250);
  const dTz = useDebounced(tz, 250);
  const [preview] = useQuery({ query: CronPreviewQuery, variables: { cron: dCron, timezone: dTz }, pause: dCron === '' });
  const settled = dCron === cron.trim() && dTz === tz;
  const pv = dCron !== '' && settled ? preview.data?.cronPreview : undefined;
  const previewErrors = pv?.userErrors ?? [];
  const cronError = previewErrors.find((e) => e.code === 'INVALID_CRON' || e.field === 'cron');
  const tzError = previewErrors.find((e) => e.code === 'INVALID_TIMEZONE' || e.field === 'timezone');
  const saveCronError = saveErrors.find((e) => e.field === 'cron' || e.code === 'INVALID_CRON');

  const changes = scheduleChanges(job, cron, tz, enabled, lease);
  const saveLeaseError = saveErrors.find((e) => e.field === 'leaseSeconds');
  const blocked = leaseError
    ? `Fix the lease override first: ${leaseError.message}.`
    : !changes
      ? 'Nothing changed.'
      : cron.trim() !== '' && !settled
        ? 'Checking the cron…'
        : pv && !pv.valid
          ? 'Fix the schedule first: the server says it is not valid.'
          : null;

  const save = async () => {
    if (!changes) return;
    setSaving(true);
    setSaveErrors([]);
    setRequested(null);
    const res = await update({ input: changes });
    setSaving(false);
    const errs = res.data?.updateJobSchedule?.userErrors ?? [];
    const req = res.data?.updateJobSchedule?.scheduleRequest;
    if (req) {
      // A HIGH-risk job: nothing changed yet; the change waits for a second person.
      setRequested(req);
      return;
    }
    if (errs.length > 0) {
      setSaveErrors(errs);
      return;
    }
    if (report(res, (d) => d.updateJobSchedule, `${job.name}: schedule saved`)) onSaved();
  };

  return (
    <Stack gap="sm" data-testid="schedule-editor">
      <Group align="flex-start" grow preventGrowOverflow={false} wrap="wrap">
        <TextInput
          label="Cron"
          description="5 fields (minute first), 6 fields (seconds first) or @daily, @hourly, @every 10m…; empty: manual only"
          value={cron}
          onChange={(e) => {
            setCron(e.currentTarget.value);
            setSaveErrors([]);
          }}
          error={fieldError(cronError ?? saveCronError)}
          errorProps={{ 'data-testid': 'cron-error' }}
          styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          miw={260}
          data-testid="cron-input"
          aria-describedby="cron-words"
        />
        <Select
          label="Time zone"
          description="IANA zone the cron is read in"
          data={zones}
          value={tz}
          onChange={(v) => v && setTz(v)}
          searchable
          limit={50}
          nothingFoundMessage="No such zone"
          error={fieldError(tzError)}
          miw={220}
          data-testid="timezone-select"
          allowDeselect={false}
        />
      </Group>
      {!cronError && (
        <Text size="sm" id="cron-words" data-testid="cron-preview-words">
          {cronInWords(cron, tz)}
        </Text>
      )}
      {cron.trim() !== '' && (
        <div data-testid="cron-preview">
          {pv?.valid && (
            <>
              <Text size="xs" c="dimmed">
                With this schedule the next fires would be ({tz}):
              </Text>
              <List size="sm" spacing={2} data-testid="cron-preview-times">
                {pv.nextFireTimes.map((t) => (
                  <List.Item key={t}>{formatDateTime(t, tz)}</List.Item>
                ))}
              </List>
            </>
          )}
        </div>
      )}
      <Switch label="Schedule enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} data-testid="schedule-enabled" />
      <Group align="flex-end">
        <NumberInput
          label="Lease override (seconds)"
          description="empty: the job's or the instance's default"
          value={leaseText}
          onChange={(v) => {
            setLeaseText(v);
            setSaveErrors([]);
          }}
          clampBehavior="none"
          allowDecimal={false}
          min={MIN_LEASE_SECONDS}
          max={MAX_LEASE_SECONDS}
          error={fieldError(leaseError ?? saveLeaseError)}
          errorProps={{ 'data-testid': 'lease-error' }}
          w={220}
          data-testid="lease-input"
        />
      </Group>
      <UserErrorList errors={saveErrors.filter((e) => e !== saveCronError && e !== saveLeaseError)} />
      {requested && (
        <Alert color="orange" title="Not changed yet: waiting for a second person" data-testid="schedule-requested">
          This job is HIGH risk, so a schedule change that makes it fire needs another person's approval (APPROVAL_REQUIRED). It was recorded as
          schedule request #{runNumber(requested.id)} ({requested.status}); it applies once an approver approves it in the{' '}
          <Anchor component={Link} to="/admin/replays">
            Replays
          </Anchor>{' '}
          queue.
        </Alert>
      )}
      <Group>
        <ActionButton need="OPERATOR" blockedBy={blocked} loading={saving} onClick={() => void save()} data-testid="schedule-save">
          Save schedule
        </ActionButton>
        <Button
          variant="subtle"
          disabled={!changes && !leaseError}
          onClick={() => {
            setCron(job.cron);
            setTz(job.timezone || 'UTC');
            setEnabled(job.enabled);
            setLeaseText(job.leaseSeconds ?? '');
            setSaveErrors([]);
          }}
        >
          Revert
        </Button>
      </Group>
    </Stack>
  );
}
