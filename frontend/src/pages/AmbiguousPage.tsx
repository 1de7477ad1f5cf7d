// The ambiguous queue across jobs: targets whose external effect is in doubt. Ask the job's
// reconcile hook (a worker asks it; the row shows "reconciling…" and then the outcome, live),
// or resolve by hand with evidence.
import { Anchor, Badge, Button, Card, Code, Group, Modal, Radio, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';

import { JOBS_PAGE_SIZE, JobsQuery } from '../api/jobs';
import { LedgerQuery, ReconcileEntryMutation, ReconcileRequestSubscription, reconcileView, ResolveAmbiguousMutation } from '../api/ledger';
import { jobPath, runNumber, runPath } from '../api/runs';
import { ActionButton } from '../components/ActionButton';
import { RiskBadge } from '../components/Badges';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading, UserErrorList } from '../components/QueryState';
import { report } from '../components/report';
import { TimeAgo } from '../components/Time';
import { useCursorPager } from '../hooks/useCursorPager';
import type { AmbiguousResolution, LedgerEntryFieldsFragment } from '../gql/graphql';
import type { UserErrorLike } from '../model/errors';

/** resolveBlockedBy says why a hand resolution cannot be sent, or null. */
export function resolveBlockedBy(resolution: AmbiguousResolution | null, evidenceRef: string): string | null {
  if (!resolution) return 'Choose whether the effect happened.';
  if (resolution === 'CONFIRMED' && evidenceRef.trim() === '') return 'Confirming an effect needs evidence (a provider reference, a screenshot link).';
  return null;
}

function ResolveModal({ entry, onClose }: { entry: LedgerEntryFieldsFragment; onClose: (changed: boolean) => void }) {
  const [resolution, setResolution] = useState<AmbiguousResolution | null>(null);
  const [evidenceRef, setEvidenceRef] = useState('');
  const [note, setNote] = useState('');
  const [errors, setErrors] = useState<UserErrorLike[]>([]);
  const [state, resolve] = useMutation(ResolveAmbiguousMutation);
  const submit = async () => {
    if (!resolution) return;
    const res = await resolve({ input: { entryId: entry.id, resolution, evidenceRef: evidenceRef.trim() || null, note: note.trim() || null } });
    const errs = res.data?.resolveAmbiguous?.userErrors ?? [];
    if (errs.length) {
      setErrors(errs);
      return;
    }
    if (report(res, (d) => d.resolveAmbiguous, `${entry.targetKey}: resolved as ${resolution}`)) onClose(true);
  };
  return (
    <Modal opened onClose={() => onClose(false)} title={`Resolve ${entry.targetKey} by hand`} size="lg">
      <Stack>
        <Text size="sm">
          Check the other side (idempotency key <Code>{entry.idempotencyKey}</Code>) and record what you found.
        </Text>
        <Radio.Group label="Did the effect happen?" value={resolution} onChange={(v) => setResolution(v as AmbiguousResolution)} required>
          <Stack gap="xs" mt="xs">
            <Radio value="CONFIRMED" label="Yes — it happened (CONFIRMED; never retried)" data-testid="resolve-confirmed" />
            <Radio value="NOT_APPLIED" label="No — it did not happen (NOT_APPLIED; safe to retry)" data-testid="resolve-not-applied" />
          </Stack>
        </Radio.Group>
        <TextInput label="Evidence reference" description="Required to confirm: provider reference, ticket, log link" value={evidenceRef} onChange={(e) => setEvidenceRef(e.currentTarget.value)} data-testid="resolve-evidence" />
        <Textarea label="Note" value={note} onChange={(e) => setNote(e.currentTarget.value)} autosize minRows={2} />
        <UserErrorList errors={errors} />
        {state.error && <ErrorAlert error={state.error} />}
        <Group justify="flex-end">
          <Button variant="default" onClick={() => onClose(false)}>
            Cancel
          </Button>
          <ActionButton need="OPERATOR" blockedBy={resolveBlockedBy(resolution, evidenceRef)} loading={state.fetching} onClick={() => void submit()} data-testid="resolve-submit">
            Record resolution
          </ActionButton>
        </Group>
      </Stack>
    </Modal>
  );
}

/**
 * ReconcileProgress follows one reconcile request live: "reconciling…" while it is open, then
 * its outcome, which it reports once through onEnd.
 */
export function ReconcileProgress({ requestId, targetKey, onEnd }: { requestId: string; targetKey: string; onEnd: () => void }) {
  const [{ data, error }] = useSubscription({ query: ReconcileRequestSubscription, variables: { id: requestId } });
  const req = data?.reconcileRequest;
  const view = req ? reconcileView(req) : { open: true, color: 'gray' as const, label: 'reconciling…' };
  useEffect(() => {
    if (!req || view.open) return;
    notifications.show({ color: view.color, message: `${targetKey}: ${view.label}`, autoClose: req.status === 'FAILED' ? 10000 : 4000 });
    onEnd();
    // onEnd changes identity with every render of the queue; the outcome is reported once.
  }, [req?.status]);
  if (error) return <Text size="xs" c="red">{`${targetKey}: lost track of the reconcile (${error.message}); reload to see its outcome`}</Text>;
  return (
    <Badge color={view.color} variant="light" data-testid="reconcile-status" title={req?.message || undefined}>
      {view.label}
    </Badge>
  );
}

function JobQueue({ jobName, risk }: { jobName: string; risk: 'LOW' | 'MEDIUM' | 'HIGH' }) {
  const [{ data, fetching, error }, refetch] = useQuery({
    query: LedgerQuery,
    variables: { jobName, state: ['AMBIGUOUS_EFFECT'], first: 50, after: null, runId: null, targetPrefix: null },
    requestPolicy: 'cache-and-network',
  });
  const [, reconcile] = useMutation(ReconcileEntryMutation);
  const [busy, setBusy] = useState<string | null>(null);
  // entry id → the reconcile request followed live on its row
  const [reconciling, setReconciling] = useState<Record<string, string>>({});
  const [resolving, setResolving] = useState<LedgerEntryFieldsFragment | null>(null);
  const refresh = () => refetch({ requestPolicy: 'network-only' });
  const entries = data?.ledger.nodes ?? [];

  if (error) return <ErrorAlert error={error} onRetry={refresh} />;
  if (fetching && !data) return <Loading lines={2} label={`Loading ${jobName}`} />;
  if (entries.length === 0) return null;

  return (
    <Card withBorder radius="md" data-testid={`ambiguous-${jobName}`}>
      <Group gap="xs" mb="sm">
        <Anchor component={Link} to={jobPath(jobName)} fw={700}>
          {jobName}
        </Anchor>
        <RiskBadge risk={risk} />
        <Text size="sm" c="dimmed">
          {entries.length}
          {data?.ledger.pageInfo.hasNextPage ? '+' : ''} in doubt
        </Text>
      </Group>
      <div className="table-wrap">
        <Table striped miw={880} verticalSpacing={6}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>Target</Table.Th>
              <Table.Th>Step</Table.Th>
              <Table.Th>Attempt</Table.Th>
              <Table.Th>Idempotency key</Table.Th>
              <Table.Th>Last error</Table.Th>
              <Table.Th>Run</Table.Th>
              <Table.Th>Since</Table.Th>
              <Table.Th>Actions</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            {entries.map((e) => {
              const requestId = reconciling[e.id];
              return (
              <Table.Tr key={e.id} data-testid="ambiguous-row">
                <Table.Td>
                  <Code>{e.targetKey}</Code>
                </Table.Td>
                <Table.Td>{e.step}</Table.Td>
                <Table.Td>{e.attempt}</Table.Td>
                <Table.Td>
                  <Text className="mono">{e.idempotencyKey}</Text>
                </Table.Td>
                <Table.Td maw={240}>
                  <Text size="xs" c="red" lineClamp={2} title={e.lastError ?? undefined}>
                    {e.lastError ?? '—'}
                  </Text>
                </Table.Td>
                <Table.Td>
                  <Anchor component={Link} to={runPath(e.run.id)} size="sm">
                    #{runNumber(e.run.id)}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <TimeAgo iso={e.updatedAt} size="sm" />
                </Table.Td>
                <Table.Td>
                  <Group gap={6} wrap="nowrap">
                    {requestId ? (
                      <ReconcileProgress
                        requestId={requestId}
                        targetKey={e.targetKey}
                        onEnd={() => {
                          setReconciling(({ [e.id]: _, ...rest }) => rest);
                          refresh();
                        }}
                      />
                    ) : (
                      <ActionButton
                        need="OPERATOR"
                        size="xs"
                        loading={busy === e.id}
                        onClick={() =>
                          void (async () => {
                            setBusy(e.id);
                            const p = report(await reconcile({ entryId: e.id }), (d) => d.reconcileEntry, null);
                            setBusy(null);
                            const req = p?.reconcileRequest;
                            if (req) setReconciling((m) => ({ ...m, [e.id]: req.id }));
                          })()
                        }
                        data-testid="reconcile"
                      >
                        Run reconcile
                      </ActionButton>
                    )}
                    <ActionButton need="OPERATOR" size="xs" variant="light" onClick={() => setResolving(e)} data-testid="resolve">
                      Resolve…
                    </ActionButton>
                  </Group>
                </Table.Td>
              </Table.Tr>
              );
            })}
          </Table.Tbody>
        </Table>
      </div>
      {resolving && (
        <ResolveModal
          entry={resolving}
          onClose={(changed) => {
            setResolving(null);
            if (changed) refresh();
          }}
        />
      )}
    </Card>
  );
}

export function AmbiguousPage() {
  const pager = useCursorPager();
  const [{ data, fetching, error }, refetch] = useQuery({
    query: JobsQuery,
    variables: { first: JOBS_PAGE_SIZE, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  const jobs = data?.jobs.nodes ?? [];
  return (
    <Stack>
      <div>
        <Title order={1} size="h2">
          Ambiguous queue
        </Title>
        <Text c="dimmed" size="sm">
          Targets whose external effect may or may not have happened (a timeout after the call, say). They are quarantined:
          never retried until someone — the job's reconcile hook or a person with evidence — says what happened.
        </Text>
      </div>
      {error && !data && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !data && <Loading lines={4} />}
      {data && jobs.length === 0 && <Empty title="No jobs" />}
      {jobs.map((j) => (
        <JobQueue key={j.id} jobName={j.name} risk={j.riskLevel} />
      ))}
      {data && <Pager pager={pager} hasNextPage={data.jobs.pageInfo.hasNextPage} endCursor={data.jobs.pageInfo.endCursor} label="jobs" />}
      {data && (
        <Text size="sm" c="dimmed" data-testid="ambiguous-footer">
          Jobs with nothing in doubt are not listed.
        </Text>
      )}
    </Stack>
  );
}
