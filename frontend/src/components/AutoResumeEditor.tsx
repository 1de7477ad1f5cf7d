// The auto-resume editor: whether runs whose holder could not finish continue by themselves,
// how many times, after how long, and for which ways of ending. The server judges the values;
// its refusals show next to the field they name.
import { Button, Checkbox, Code, Group, NumberInput, Stack, Switch, Text } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { useMutation } from 'urql';

import { UpdateJobAutoResumeMutation } from '../api/jobs';
import type { ResumeCause } from '../gql/graphql';
import { draftOf, policyChanges, RESUME_CAUSES, resumeCauseMeta, type AutoResumePolicy, type PolicyDraft } from '../model/autoresume';
import { userErrorWords, type UserErrorLike } from '../model/errors';
import { ActionButton } from './ActionButton';
import { UserErrorList } from './QueryState';
import { report } from './report';

/** The input fields whose refusals show next to their control; others show below. */
const FIELDS = ['maxAttempts', 'backoffSeconds', 'on'] as const;
type Field = (typeof FIELDS)[number];
const isField = (f: string | null | undefined): f is Field => FIELDS.some((x) => x === f);

function fieldError(e: UserErrorLike | undefined): ReactNode {
  if (!e) return undefined;
  return (
    <>
      {userErrorWords(e.code)} <Code fz="xs">{e.code}</Code> {e.message}
    </>
  );
}

/** numberOf is a NumberInput's value as the draft holds it: a whole number, or empty. */
function numberOf(v: string | number): number | '' {
  if (typeof v === 'number') return Number.isFinite(v) ? Math.trunc(v) : '';
  const n = Number(v);
  return v.trim() === '' || !Number.isFinite(n) ? '' : Math.trunc(n);
}

export function AutoResumeEditor({ name, policy, onSaved }: { name: string; policy: AutoResumePolicy; onSaved: () => void }) {
  const [draft, setDraft] = useState<PolicyDraft>(() => draftOf(policy));
  const [errors, setErrors] = useState<UserErrorLike[]>([]);
  const [saving, setSaving] = useState(false);
  const [, update] = useMutation(UpdateJobAutoResumeMutation);

  const edit = (d: Partial<PolicyDraft>) => {
    setDraft((prev) => ({ ...prev, ...d }));
    setErrors([]);
  };
  const errorOf = (field: Field) => errors.find((e) => e.field === field);
  const changes = policyChanges(name, policy, draft);
  const blocked = !changes ? 'Nothing changed.' : saving ? 'Saving…' : null;

  const save = async () => {
    if (!changes) return;
    setSaving(true);
    setErrors([]);
    const res = await update({ input: changes });
    setSaving(false);
    const errs = res.data?.updateJobAutoResume?.userErrors ?? [];
    if (errs.length > 0) {
      setErrors(errs);
      return;
    }
    if (report(res, (d) => d.updateJobAutoResume, `${name}: auto-resume saved`)) onSaved();
  };

  return (
    <Stack gap="sm" data-testid="auto-resume-editor">
      <Switch
        label="Resume automatically"
        description="A run whose holder died, whose instance shut down or whose database went away continues from its checkpoint by itself"
        checked={draft.enabled}
        onChange={(e) => edit({ enabled: e.currentTarget.checked })}
        data-testid="auto-resume-enabled"
      />
      <Group align="flex-start" grow preventGrowOverflow={false} wrap="wrap">
        <NumberInput
          label="Max attempts"
          description="automatic resumes in one chain, 1 to 100"
          value={draft.maxAttempts}
          onChange={(v) => edit({ maxAttempts: numberOf(v) })}
          allowDecimal={false}
          clampBehavior="none"
          error={fieldError(errorOf('maxAttempts'))}
          errorProps={{ 'data-testid': 'auto-resume-max-attempts-error' }}
          miw={160}
          data-testid="auto-resume-max-attempts"
        />
        <NumberInput
          label="Backoff (seconds)"
          description="before the first resume; doubles per attempt, up to 15 min"
          value={draft.backoffSeconds}
          onChange={(v) => edit({ backoffSeconds: numberOf(v) })}
          allowDecimal={false}
          clampBehavior="none"
          error={fieldError(errorOf('backoffSeconds'))}
          errorProps={{ 'data-testid': 'auto-resume-backoff-error' }}
          miw={160}
          data-testid="auto-resume-backoff"
        />
      </Group>
      <Checkbox.Group
        label="Resume a run that ended because"
        value={[...draft.on]}
        onChange={(v) => edit({ on: RESUME_CAUSES.filter((c) => v.includes(c)) })}
        error={fieldError(errorOf('on'))}
        data-testid="auto-resume-causes"
      >
        <Stack gap={6} mt={6}>
          {RESUME_CAUSES.map((c: ResumeCause) => (
            <Checkbox
              key={c}
              value={c}
              label={resumeCauseMeta(c).label}
              description={resumeCauseMeta(c).description}
              data-testid={`auto-resume-cause-${c}`}
            />
          ))}
        </Stack>
      </Checkbox.Group>
      <Text size="xs" c="dimmed">
        A resume repeats no effect: the ledger skips confirmed targets and keeps ambiguous ones quarantined. A run that failed on its own, was
        cancelled or paused is never resumed automatically.
      </Text>
      <UserErrorList errors={errors.filter((e) => !isField(e.field))} />
      <Group>
        <ActionButton need="OPERATOR" blockedBy={blocked} loading={saving} onClick={() => void save()} data-testid="auto-resume-save">
          Save auto-resume
        </ActionButton>
        <Button
          variant="subtle"
          disabled={!changes}
          onClick={() => {
            setDraft(draftOf(policy));
            setErrors([]);
          }}
        >
          Revert
        </Button>
      </Group>
    </Stack>
  );
}
