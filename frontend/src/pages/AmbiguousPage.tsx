// The ambiguous queue across jobs: targets whose external effect is in doubt. Ask the job's
// reconcile hook (a worker asks it; the row shows "reconciling…" and then the outcome, live),
// or resolve by hand with evidence.
import { Anchor, Badge, Button, Card, Checkbox, Code, Group, Modal, Radio, Stack, Table, Text, Textarea, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';

import { JOBS_PAGE_SIZE, JobsQuery } from '../api/jobs';
import {
  attemptText,
  LedgerQuery,
  ReconcileEntriesMutation,
  ReconcileEntryMutation,
  ReconcileRequestSubscription,
  reconcileView,
  resolveBlockedBy,
  ResolveAmbiguousManyMutation,
  ResolveAmbiguousMutation,
} from '../api/ledger';
import { jobPath, runNumber, runPath } from '../api/runs';
import { ActionButton } from '../components/ActionButton';
import { RiskBadge } from '../components/Badges';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading, UserErrorList } from '../components/QueryState';
import { report } from '../components/report';
import { TargetLink } from '../components/TargetLink';
import { TimeAgo } from '../components/Time';
import { useCursorPager } from '../hooks/useCursorPager';
import type { AmbiguousResolution, LedgerEntryFieldsFragment } from '../gql/graphql';
import type { UserErrorLike } from '../model/errors';

export { resolveBlockedBy };

/**
 * ResolveModal records what a person found for one entry in doubt, or for several at once
 * (one note for all, one audit entry listing them).
 */
export function ResolveModal({ entries, onClose }: { entries: LedgerEntryFieldsFragment[]; onClose: (changed: boolean) => void }) {
  const [resolution, setResolution] = useState<AmbiguousResolution | null>(null);
  const [evidenceRef, setEvidenceRef] = useState('');
  const [note, setNote] = useState('');
  const [errors, setErrors] = useState<UserErrorLike[]>([]);
  const [state, resolve] = useMutation(ResolveAmbiguousMutation);
  const [manyState, resolveMany] = useMutation(ResolveAmbiguousManyMutation);
  const [resolvedSome, setResolvedSome] = useState(false);
  const entry = entries[0];
  if (!entry) return null;
  const many = entries.length > 1;
  const submit = async () => {
    if (!resolution) return;
    const common = { resolution, evidenceRef: evidenceRef.trim() || null, note: note.trim() || null };
    if (many) {
      const res = await resolveMany({ input: { entryIds: entries.map((e) => e.id), ...common } });
      const p = res.data?.resolveAmbiguousMany;
      if (!p) {
        report(res, (d) => d.resolveAmbiguousMany, null);
        return;
      }
      if (p.ledgerEntries.length > 0) {
        setResolvedSome(true);
        notifications.show({ color: 'green', message: `${p.ledgerEntries.length} of ${entries.length} targets resolved as ${resolution}` });
      }
      if (p.userErrors.length) {
        setErrors(p.userErrors);
        return;
      }
      onClose(true);
      return;
    }
    const res = await resolve({ input: { entryId: entry.id, ...common } });
    const errs = res.data?.resolveAmbiguous?.userErrors ?? [];
    if (errs.length) {
      setErrors(errs);
      return;
    }
    if (report(res, (d) => d.resolveAmbiguous, `${entry.targetKey}: resolved as ${resolution}`)) onClose(true);
  };
  const close = () => onClose(resolvedSome);
  return (
    <Modal opened onClose={close} title={many ? `Resolve ${entries.length} targets by hand` : `Resolve ${entry.targetKey} by hand`} size="lg">
      <Stack>
        {many ? (
          <Text size="sm" data-testid="resolve-members">
            One resolution and one note for all of: {entries.map((e) => e.targetKey).join(', ')}. Check each on the other side first.
          </Text>
        ) : (
          <Text size="sm">
            Check the other side (idempotency key <Code>{entry.idempotencyKey}</Code>) and record what you found.
          </Text>
        )}
        <Radio.Group label="Did the effect happen?" value={resolution} onChange={(v) => setResolution(v as AmbiguousResolution)} required>
          <Stack gap="xs" mt="xs">
            <Radio value="CONFIRMED" label="Yes — it happened (CONFIRMED; never retried)" data-testid="resolve-confirmed" />
            <Radio value="NOT_APPLIED" label="No — it did not happen (NOT_APPLIED; safe to retry)" data-testid="resolve-not-applied" />
          </Stack>
        </Radio.Group>
        <TextInput label="Evidence reference" description="Required to confirm: provider reference, ticket, log link" required={resolution === 'CONFIRMED'} maxLength={500} value={evidenceRef} onChange={(e) => setEvidenceRef(e.currentTarget.value)} data-testid="resolve-evidence" />
        <Textarea
          label="Note"
          description="Required: what you checked, for the audit log"
          value={note}
          onChange={(e) => setNote(e.currentTarget.value)}
          autosize
          minRows={2}
          required
          maxLength={2000}
          data-testid="resolve-note"
        />
        <UserErrorList errors={errors} />
        {state.error && <ErrorAlert error={state.error} />}
        {manyState.error && <ErrorAlert error={manyState.error} />}
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            {resolvedSome ? 'Close' : 'Cancel'}
          </Button>
          <ActionButton
            need="OPERATOR"
            blockedBy={resolveBlockedBy(resolution, evidenceRef, note)}
            loading={state.fetching || manyState.fetching}
            onClick={() => void submit()}
            data-testid="resolve-submit"
          >
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
  const [resolving, setResolving] = useState<LedgerEntryFieldsFragment[] | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [bulkErrors, setBulkErrors] = useState<UserErrorLike[]>([]);
  const [bulkState, reconcileMany] = useMutation(ReconcileEntriesMutation);
  const refresh = () => refetch({ requestPolicy: 'network-only' });
  const entries = data?.ledger.nodes ?? [];
  const chosen = entries.filter((e) => selected.has(e.id));
  const toggle = (id: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  const reconcileBulk = async (all: boolean) => {
    setBulkErrors([]);
    const res = await reconcileMany({ input: all ? { jobName } : { entryIds: chosen.map((e) => e.id) } });
    const p = report(res, (d) => d.reconcileEntries, null);
    if (!p) return;
    const started: Record<string, string> = {};
    for (const q of p.reconcileRequests) started[q.entry.id] = q.id;
    setReconciling((m) => ({ ...m, ...started }));
    setSelected(new Set());
    if (p.userErrors.length) setBulkErrors(p.userErrors);
    notifications.show({
      color: p.userErrors.length ? 'orange' : 'blue',
      message: `${jobName}: ${p.reconcileRequests.length} reconcile(s) asked${p.userErrors.length ? `, ${p.userErrors.length} refused` : ''}${p.more ? '; more remain: run again once these are done' : ''}`,
    });
  };

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
      <Group gap="xs" mb="sm" data-testid="bulk-actions">
        <Text size="sm">{chosen.length} selected</Text>
        <ActionButton
          need="OPERATOR"
          size="xs"
          variant="light"
          blockedBy={chosen.length === 0 ? 'Select targets first.' : null}
          loading={bulkState.fetching}
          onClick={() => void reconcileBulk(false)}
          data-testid="bulk-reconcile"
        >
          Reconcile selected
        </ActionButton>
        <ActionButton
          need="OPERATOR"
          size="xs"
          variant="light"
          blockedBy={chosen.length === 0 ? 'Select targets first.' : null}
          onClick={() => setResolving(chosen)}
          data-testid="bulk-resolve"
        >
          Resolve selected…
        </ActionButton>
        <ActionButton need="OPERATOR" size="xs" variant="subtle" loading={bulkState.fetching} onClick={() => void reconcileBulk(true)} data-testid="reconcile-all">
          Reconcile all
        </ActionButton>
      </Group>
      <UserErrorList errors={bulkErrors} />
      <div className="table-wrap">
        <Table striped miw={880} verticalSpacing={6}>
          <Table.Thead>
            <Table.Tr>
              <Table.Th>
                <Checkbox
                  aria-label={`Select every target of ${jobName}`}
                  checked={entries.length > 0 && chosen.length === entries.length}
                  indeterminate={chosen.length > 0 && chosen.length < entries.length}
                  onChange={() => setSelected(chosen.length === entries.length ? new Set() : new Set(entries.map((e) => e.id)))}
                  data-testid="select-all"
                />
              </Table.Th>
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
                  <Checkbox aria-label={`Select ${e.targetKey}`} checked={selected.has(e.id)} onChange={() => toggle(e.id)} data-testid="select-row" />
                </Table.Td>
                <Table.Td>
                  <TargetLink jobName={jobName} targetKey={e.targetKey} />
                </Table.Td>
                <Table.Td>{e.step}</Table.Td>
                <Table.Td>{attemptText(e.attempt)}</Table.Td>
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
                    <ActionButton need="OPERATOR" size="xs" variant="light" onClick={() => setResolving([e])} data-testid="resolve">
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
          entries={resolving}
          onClose={(changed) => {
            setResolving(null);
            if (changed) {
              setSelected(new Set());
              refresh();
            }
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
