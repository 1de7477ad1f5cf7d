// The limits editor of one downstream: rate and burst, concurrency, quota and its window, each
// beside the code's default; buttons that remove a limit; pause and resume; a reason for the
// audit log. The server judges every value; its refusals show next to the field they name.
import { Button, Code, Group, NumberInput, Select, Stack, Text, TextInput } from '@mantine/core';
import { IconPlayerPause, IconPlayerPlay } from '@tabler/icons-react';
import { useState, type ReactNode } from 'react';
import { useMutation } from 'urql';

import { UpdateDownstreamMutation } from '../api/downstreams';
import type { DownstreamLimitKind, QuotaWindow, UpdateDownstreamInput } from '../gql/graphql';
import {
  concurrencyLimit,
  isLimitField,
  limitsChanges,
  limitsDraft,
  quotaLimit,
  rateLimit,
  type Downstream,
  type LimitField,
  type LimitsDraft,
} from '../model/downstreams';
import { userErrorWords, type UserErrorLike } from '../model/errors';
import { ActionButton } from './ActionButton';
import { UserErrorList } from './QueryState';
import { report } from './report';

function fieldError(e: UserErrorLike | undefined): ReactNode {
  if (!e) return undefined;
  return (
    <>
      {userErrorWords(e.code)} <Code fz="xs">{e.code}</Code> {e.message}
    </>
  );
}

/** numberOf is a NumberInput's value as the draft holds it: a number, or empty. */
function numberOf(v: string | number, whole: boolean): number | '' {
  const n = typeof v === 'number' ? v : v.trim() === '' ? NaN : Number(v);
  if (!Number.isFinite(n)) return '';
  return whole ? Math.trunc(n) : n;
}

const CLEARS: readonly { kind: DownstreamLimitKind; label: string; done: string; has: (d: Downstream) => boolean }[] = [
  { kind: 'RATE', label: 'Remove rate limit', done: 'rate limit removed', has: (d) => d.limits.ratePerSecond !== null },
  { kind: 'CONCURRENCY', label: 'Remove concurrency limit', done: 'concurrency limit removed', has: (d) => d.limits.concurrency !== null },
  { kind: 'QUOTA', label: 'Remove quota', done: 'quota removed', has: (d) => d.limits.quota !== null },
];

interface NumberFieldProps {
  field: LimitField;
  label: string;
  now: string;
  byDefault: string;
  value: number | '';
  whole: boolean;
  error: UserErrorLike | undefined;
  onChange: (v: number | '') => void;
}

function LimitInput({ field, label, now, byDefault, value, whole, error, onChange }: NumberFieldProps) {
  return (
    <NumberInput
      label={label}
      description={`now ${now} · default ${byDefault}`}
      value={value}
      onChange={(v) => onChange(numberOf(v, whole))}
      allowDecimal={!whole}
      clampBehavior="none"
      error={fieldError(error)}
      errorProps={{ 'data-testid': `ds-${field}-error` }}
      miw={150}
      data-testid={`ds-${field}`}
    />
  );
}

export function DownstreamEditor({ downstream: d, onSaved }: { downstream: Downstream; onSaved?: () => void }) {
  const [draft, setDraft] = useState<LimitsDraft>(() => limitsDraft(d.limits));
  const [reason, setReason] = useState('');
  const [errors, setErrors] = useState<UserErrorLike[]>([]);
  const [busy, setBusy] = useState(false);
  const [, update] = useMutation(UpdateDownstreamMutation);

  const edit = (p: Partial<LimitsDraft>) => {
    setDraft((prev) => ({ ...prev, ...p }));
    setErrors([]);
  };
  const errorOf = (f: LimitField) => errors.find((e) => e.field === f);
  const changes = limitsChanges(d.name, d.limits, draft);
  const busyReason = busy ? 'Saving…' : null;

  const send = async (input: UpdateDownstreamInput, success: string) => {
    setBusy(true);
    setErrors([]);
    const res = await update({ input: reason.trim() ? { ...input, reason: reason.trim() } : input });
    setBusy(false);
    const errs = res.data?.updateDownstream.userErrors ?? [];
    if (errs.length > 0) {
      setErrors(errs);
      return;
    }
    const p = report(res, (data) => data.updateDownstream, success);
    if (p?.downstream) {
      setDraft(limitsDraft(p.downstream.limits));
      setReason('');
      onSaved?.();
    }
  };

  const l = d.limits;
  const def = d.defaults;
  return (
    <Stack gap="sm" data-testid="downstream-editor">
      <Group align="flex-start" grow preventGrowOverflow={false} wrap="wrap">
        <LimitInput
          field="ratePerSecond"
          label="Rate (calls/s)"
          now={rateLimit(l)}
          byDefault={rateLimit(def)}
          value={draft.ratePerSecond}
          whole={false}
          error={errorOf('ratePerSecond')}
          onChange={(v) => edit({ ratePerSecond: v })}
        />
        <LimitInput
          field="burst"
          label="Burst"
          now={l.burst === null ? 'none' : String(l.burst)}
          byDefault={def.burst === null ? 'none' : String(def.burst)}
          value={draft.burst}
          whole
          error={errorOf('burst')}
          onChange={(v) => edit({ burst: v })}
        />
        <LimitInput
          field="concurrency"
          label="Concurrency"
          now={concurrencyLimit(l)}
          byDefault={concurrencyLimit(def)}
          value={draft.concurrency}
          whole
          error={errorOf('concurrency')}
          onChange={(v) => edit({ concurrency: v })}
        />
        <LimitInput
          field="quota"
          label="Quota (calls)"
          now={quotaLimit(l)}
          byDefault={quotaLimit(def)}
          value={draft.quota}
          whole
          error={errorOf('quota')}
          onChange={(v) => edit({ quota: v })}
        />
        <Select
          label="Quota window"
          description="the quota counts per UTC hour or day"
          data={[
            { value: 'HOUR', label: 'per hour' },
            { value: 'DAY', label: 'per day' },
          ]}
          value={draft.quotaWindow}
          onChange={(v) => v && edit({ quotaWindow: v as QuotaWindow })}
          allowDeselect={false}
          error={fieldError(errorOf('quotaWindow'))}
          miw={150}
          data-testid="ds-quotaWindow"
        />
      </Group>
      <TextInput
        label="Reason"
        description="for the audit log, with every change below"
        value={reason}
        onChange={(e) => setReason(e.currentTarget.value)}
        maxLength={2000}
        data-testid="ds-reason"
      />
      <UserErrorList errors={errors.filter((e) => !isLimitField(e.field))} />
      <Group gap="xs" wrap="wrap">
        <ActionButton
          need="OPERATOR"
          blockedBy={busyReason ?? (changes ? null : 'Nothing changed.')}
          loading={busy}
          onClick={() => changes && void send(changes, `${d.name}: limits saved`)}
          data-testid="ds-save"
        >
          Save limits
        </ActionButton>
        <Button
          variant="subtle"
          disabled={!changes}
          onClick={() => {
            setDraft(limitsDraft(l));
            setErrors([]);
          }}
          data-testid="ds-revert"
        >
          Revert
        </Button>
        {l.paused ? (
          <ActionButton
            need="OPERATOR"
            blockedBy={busyReason}
            color="green"
            variant="light"
            leftSection={<IconPlayerPlay size={16} />}
            onClick={() => void send({ name: d.name, paused: false }, `${d.name}: calls go again`)}
            data-testid="ds-resume"
          >
            Resume calls
          </ActionButton>
        ) : (
          <ActionButton
            need="OPERATOR"
            blockedBy={busyReason}
            color="yellow"
            variant="light"
            leftSection={<IconPlayerPause size={16} />}
            onClick={() => void send({ name: d.name, paused: true }, `${d.name}: paused; its calls wait at their item boundary`)}
            data-testid="ds-pause"
          >
            Pause calls
          </ActionButton>
        )}
      </Group>
      <Group gap="xs" wrap="wrap">
        {CLEARS.map((c) => (
          <ActionButton
            key={c.kind}
            need="OPERATOR"
            size="xs"
            variant="default"
            blockedBy={busyReason ?? (c.has(d) ? null : 'No such limit is set.')}
            onClick={() => void send({ name: d.name, clear: [c.kind] }, `${d.name}: ${c.done}`)}
            data-testid={`ds-clear-${c.kind}`}
          >
            {c.label}
          </ActionButton>
        ))}
      </Group>
      <Text size="xs" c="dimmed">
        An empty field leaves its limit as it is. A change holds for the whole cluster within a second. Pausing holds every call at its item boundary:
        runs wait, they do not fail.
      </Text>
    </Stack>
  );
}
