// Runs across all jobs: filters held in the URL, keyset pages, live updates, and cancelling
// the selected runs.
import { Alert, Anchor, Badge, Button, Card, Checkbox, Chip, Group, Modal, SegmentedControl, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { notifications } from '@mantine/notifications';
import { useEffect, useMemo, useReducer, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useMutation, useQuery, useSubscription } from 'urql';

import { AllRunsQuery, CancelRunsMutation, jobPath, runPath, RunEventsSubscription, type RunSummary } from '../api/runs';
import { useOnReconnect } from '../auth/AuthContext';
import { ActionButton } from '../components/ActionButton';
import { RunStatusBadge } from '../components/Badges';
import { Pager } from '../components/Pager';
import { RunDurationText, RunProcessedText, RunTriggerText } from '../components/RunsTable';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { TimeAgo } from '../components/Time';
import type { RunEventsSubscription as RunEventsData } from '../gql/graphql';
import { useCursorPager } from '../hooks/useCursorPager';
import { describeError, describeUserErrors } from '../model/errors';
import {
  isEmptyRunsFilter,
  matchesRunsFilter,
  parseRunNumber,
  parseRunsFilter,
  RUN_STATUSES,
  RUN_TRIGGERS,
  runsFilterParams,
  toRunsFilterInput,
  WINDOWS,
  type RunsFilterState,
  type RunsWindow,
} from '../model/runsFilter';
import { isActive, runStatusMeta, triggerLabel } from '../model/status';

const PAGE = 25;

/** What the live subscription has seen since the page's data was fetched. */
interface LiveState {
  /** The latest state of each run seen live, by id. */
  byId: Record<string, RunSummary>;
  /** Bumped when a run matching the filter starts, changes status or ends. */
  changes: number;
}

function reduceLive(filter: RunsFilterState) {
  return (prev: LiveState | undefined, data: RunEventsData): LiveState => {
    const p = prev ?? { byId: {}, changes: 0 };
    const { kind, run } = data.runEvents;
    const before = p.byId[run.id];
    const concerns = matchesRunsFilter(run, filter, Date.now()) || (before !== undefined && matchesRunsFilter(before, filter, Date.now()));
    const lifecycle = kind === 'STARTED' || kind === 'STATUS_CHANGED' || kind === 'FINISHED';
    return {
      byId: { ...p.byId, [run.id]: run },
      changes: concerns && lifecycle ? p.changes + 1 : p.changes,
    };
  };
}

/** A text filter that applies on Enter or when it loses focus. */
function CommitInput({
  label,
  value,
  placeholder,
  onCommit,
  testid,
  error,
}: {
  label: string;
  value: string;
  placeholder: string;
  onCommit: (v: string) => void;
  testid: string;
  error?: string | null;
}) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  const commit = () => {
    if (draft.trim() !== value) onCommit(draft.trim());
  };
  return (
    <TextInput
      label={label}
      size="xs"
      placeholder={placeholder}
      value={draft}
      error={error}
      onChange={(e) => setDraft(e.currentTarget.value)}
      onBlur={commit}
      onKeyDown={(e) => {
        if (e.key === 'Enter') commit();
      }}
      data-testid={testid}
      w={{ base: '100%', xs: 180 }}
    />
  );
}

/** toLocalInput renders an ISO time for a datetime-local input, in the viewer's zone. */
function toLocalInput(iso: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  const off = d.getTimezoneOffset() * 60_000;
  return new Date(d.getTime() - off).toISOString().slice(0, 16);
}

function Filters({ filter, onChange }: { filter: RunsFilterState; onChange: (f: RunsFilterState) => void }) {
  const [numberError, setNumberError] = useState<string | null>(null);
  return (
    <Stack gap="xs" data-testid="runs-filters">
      <Group gap="sm" align="flex-end" wrap="wrap">
        <CommitInput
          label="Run number"
          placeholder="#42"
          value={filter.number !== null ? String(filter.number) : ''}
          error={numberError}
          testid="runs-filter-number"
          onCommit={(v) => {
            if (!v) {
              setNumberError(null);
              onChange({ ...filter, number: null });
              return;
            }
            const n = parseRunNumber(v);
            setNumberError(n === null ? 'A run number, such as 42 or #42' : null);
            if (n !== null) onChange({ ...filter, number: n });
          }}
        />
        <CommitInput label="Job" placeholder="any job" value={filter.job} testid="runs-filter-job" onCommit={(v) => onChange({ ...filter, job: v })} />
        <CommitInput
          label="Instance"
          placeholder="any instance"
          value={filter.instance}
          testid="runs-filter-instance"
          onCommit={(v) => onChange({ ...filter, instance: v })}
        />
        <TextInput
          label="Started from"
          size="xs"
          type="datetime-local"
          value={toLocalInput(filter.from)}
          onChange={(e) => {
            const v = e.currentTarget.value;
            onChange({ ...filter, from: v ? new Date(v).toISOString() : '' });
          }}
          data-testid="runs-filter-from"
        />
        <TextInput
          label="Started before"
          size="xs"
          type="datetime-local"
          value={toLocalInput(filter.before)}
          onChange={(e) => {
            const v = e.currentTarget.value;
            onChange({ ...filter, before: v ? new Date(v).toISOString() : '' });
          }}
          data-testid="runs-filter-before"
        />
      </Group>
      <Group gap="sm" wrap="wrap">
        <SegmentedControl
          size="xs"
          value={filter.window ?? 'any'}
          onChange={(v) =>
            onChange({
              ...filter,
              window: v === 'any' ? null : (v as RunsWindow),
            })
          }
          data={[
            { value: 'any', label: 'Any time' },
            ...Object.keys(WINDOWS).map((w) => ({
              value: w,
              label: `Last ${w}`,
            })),
          ]}
          aria-label="Time window"
          data-testid="runs-filter-window"
        />
      </Group>
      <Chip.Group
        multiple
        value={filter.statuses}
        onChange={(v) =>
          onChange({
            ...filter,
            statuses: RUN_STATUSES.filter((s) => v.includes(s)),
          })
        }
      >
        <Group gap={6} role="group" aria-label="Filter runs by status">
          {RUN_STATUSES.map((s) => (
            <Chip key={s} value={s} size="xs" color={runStatusMeta(s).color} wrapperProps={{ 'data-testid': `runs-status-${s}` }}>
              {runStatusMeta(s).label}
            </Chip>
          ))}
        </Group>
      </Chip.Group>
      <Chip.Group
        multiple
        value={filter.triggers}
        onChange={(v) =>
          onChange({
            ...filter,
            triggers: RUN_TRIGGERS.filter((s) => v.includes(s)),
          })
        }
      >
        <Group gap={6} role="group" aria-label="Filter runs by trigger">
          {RUN_TRIGGERS.map((t) => (
            <Chip key={t} value={t} size="xs" variant="outline" wrapperProps={{ 'data-testid': `runs-trigger-${t}` }}>
              {triggerLabel(t)}
            </Chip>
          ))}
        </Group>
      </Chip.Group>
    </Stack>
  );
}

export function RunsPage() {
  // A socket that connected again missed events: read the page afresh.
  const [reconnects, bump] = useReducer((n: number) => n + 1, 0);
  useOnReconnect(bump);
  return <RunsView reconnects={reconnects} />;
}

/** RunsView is the runs page; reconnects counts the subscription socket's reconnections. */
export function RunsView({ reconnects }: { reconnects: number }) {
  const [params, setParams] = useSearchParams();
  const { filter, problems } = useMemo(() => parseRunsFilter(params), [params]);
  const key = runsFilterParams(filter).toString();
  const pager = useCursorPager();
  const { reset } = pager;
  useEffect(() => reset(), [key, reset]);
  // A relative window is taken from the moment the filter was set (or the page refreshed).
  const [epoch, bumpEpoch] = useReducer((n: number) => n + 1, 0);
  const input = useMemo(() => toRunsFilterInput(filter, Date.now()), [key, epoch]);
  const [{ data, fetching, error }, refetch] = useQuery({
    query: AllRunsQuery,
    variables: { filter: input, first: PAGE, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  const refresh = () => {
    bumpEpoch();
    refetch({ requestPolicy: 'network-only' });
  };
  useEffect(() => {
    if (reconnects > 0) {
      bumpEpoch();
      refetch({ requestPolicy: 'network-only' });
    }
  }, [reconnects, refetch]);

  const reducer = useMemo(() => reduceLive(filter), [key]);
  const [live] = useSubscription(
    {
      query: RunEventsSubscription,
      variables: { jobName: filter.job || null },
    },
    reducer,
  );
  const changes = live.data?.changes ?? 0;
  const [seen, setSeen] = useState(0);
  const onFirstPage = pager.page === 1;
  useEffect(() => {
    if (changes > seen && onFirstPage) {
      setSeen(changes);
      refetch({ requestPolicy: 'network-only' });
    }
  }, [changes, seen, onFirstPage, refetch]);

  const setFilter = (f: RunsFilterState) => {
    setSelected(new Set());
    setParams(runsFilterParams(f));
  };

  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [confirming, setConfirming] = useState(false);
  const [cancelState, cancelRuns] = useMutation(CancelRunsMutation);
  const conn = data?.runs;
  const rows = (conn?.nodes ?? []).map((r) => live.data?.byId[r.id] ?? r);
  const activeOnPage = rows.filter((r) => isActive(r.status));
  const toggle = (id: string) =>
    setSelected((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const allSelected = activeOnPage.length > 0 && activeOnPage.every((r) => selected.has(r.id));

  const doCancel = async () => {
    setConfirming(false);
    const res = await cancelRuns({ runIds: [...selected] });
    if (res.error) {
      const d = describeError(res.error);
      notifications.show({
        color: 'red',
        title: d.title,
        message: `${d.code}: ${d.detail}`,
        autoClose: 8000,
      });
      return;
    }
    const p = res.data?.cancelRuns;
    if (!p) return;
    if (p.runs.length > 0)
      notifications.show({
        color: 'green',
        message: `Cancel requested for ${p.runs.length} run${p.runs.length === 1 ? '' : 's'}: ${p.runs.map((r) => `#${r.number}`).join(', ')}`,
      });
    for (const e of describeUserErrors(p.userErrors)) {
      notifications.show({
        color: 'orange',
        title: e.title,
        message: `${e.code}: ${e.detail}`,
        autoClose: 10000,
      });
    }
    setSelected(new Set());
    refetch({ requestPolicy: 'network-only' });
  };

  return (
    <Stack data-testid="runs-page">
      <Group justify="space-between" wrap="wrap">
        <Title order={1} size="h2">
          Runs
        </Title>
        <Group gap="xs">
          {changes > seen && !onFirstPage && (
            <Button size="xs" variant="light" onClick={() => pager.reset()} data-testid="runs-new">
              New activity: back to the newest
            </Button>
          )}
          {!isEmptyRunsFilter(filter) && (
            <Button size="xs" variant="subtle" onClick={() => setFilter(parseRunsFilter(new URLSearchParams()).filter)} data-testid="runs-clear">
              Clear filters
            </Button>
          )}
        </Group>
      </Group>
      <Card withBorder radius="md">
        <Filters key={key} filter={filter} onChange={setFilter} />
      </Card>
      {problems.length > 0 && (
        <Alert color="orange" title="Part of this address could not be read" data-testid="runs-filter-problems">
          {problems.map((p) => (
            <Text key={p} size="sm">
              {p}
            </Text>
          ))}
        </Alert>
      )}
      <Group justify="space-between" wrap="wrap">
        <Text size="sm" c="dimmed" data-testid="runs-selected">
          {selected.size > 0 ? `${selected.size} selected` : 'Select active runs to cancel them together.'}
        </Text>
        <ActionButton
          need="OPERATOR"
          size="xs"
          color="red"
          variant="light"
          blockedBy={selected.size === 0 ? 'Select one or more active runs first.' : null}
          loading={cancelState.fetching}
          onClick={() => setConfirming(true)}
          data-testid="runs-cancel-selected"
        >
          Cancel selected{selected.size > 0 ? ` (${selected.size})` : ''}
        </ActionButton>
      </Group>
      {error && <ErrorAlert error={error} onRetry={refresh} />}
      {fetching && !conn && <Loading lines={6} label="Loading runs" />}
      {conn && rows.length === 0 && <Empty title="No runs" description={isEmptyRunsFilter(filter) ? 'No job has run yet.' : 'No run matches these filters.'} />}
      {conn && rows.length > 0 && (
        <div className="table-wrap">
          <Table striped highlightOnHover miw={980} verticalSpacing={6} data-testid="runs-list">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={36}>
                  <Checkbox
                    aria-label="Select every active run on this page"
                    checked={allSelected}
                    indeterminate={!allSelected && activeOnPage.some((r) => selected.has(r.id))}
                    disabled={activeOnPage.length === 0}
                    onChange={() => setSelected(allSelected ? new Set() : new Set(activeOnPage.map((r) => r.id)))}
                    data-testid="runs-select-all"
                  />
                </Table.Th>
                <Table.Th>Run</Table.Th>
                <Table.Th>Job</Table.Th>
                <Table.Th>Status</Table.Th>
                <Table.Th>Trigger</Table.Th>
                <Table.Th>Instance</Table.Th>
                <Table.Th>Started</Table.Th>
                <Table.Th>Duration</Table.Th>
                <Table.Th>Processed</Table.Th>
                <Table.Th>Message</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {rows.map((r) => (
                <Table.Tr key={r.id} data-testid="runs-row" data-run-number={r.number} data-status={r.status}>
                  <Table.Td>
                    <Checkbox
                      aria-label={`Select run #${r.number}`}
                      checked={selected.has(r.id)}
                      disabled={!isActive(r.status)}
                      title={isActive(r.status) ? undefined : 'Only active runs can be cancelled'}
                      onChange={() => toggle(r.id)}
                      data-testid="runs-row-select"
                    />
                  </Table.Td>
                  <Table.Td>
                    <Anchor component={Link} to={runPath(r.id)} data-testid="runs-row-link">
                      #{r.number}
                    </Anchor>
                  </Table.Td>
                  <Table.Td maw={200}>
                    <Anchor component={Link} to={jobPath(r.jobName)} size="sm" lineClamp={1} title={r.jobName} style={{ wordBreak: 'break-all' }}>
                      {r.jobName}
                    </Anchor>
                  </Table.Td>
                  <Table.Td>
                    <Group gap={4} wrap="nowrap">
                      <RunStatusBadge status={r.status} needsAttention={r.needsAttention} attention={r.attention} testid="runs-row-status" />
                      {r.cancelRequested && isActive(r.status) && (
                        <Badge size="xs" color="gray" variant="outline">
                          cancelling
                        </Badge>
                      )}
                    </Group>
                  </Table.Td>
                  <Table.Td>
                    <RunTriggerText run={r} />
                  </Table.Td>
                  <Table.Td>
                    <Text size="sm">{r.instance}</Text>
                  </Table.Td>
                  <Table.Td>
                    <TimeAgo iso={r.startedAt} size="sm" />
                  </Table.Td>
                  <Table.Td>
                    <RunDurationText run={r} />
                  </Table.Td>
                  <Table.Td>
                    <RunProcessedText run={r} />
                  </Table.Td>
                  <Table.Td maw={260}>
                    <Text size="xs" c="dimmed" lineClamp={1} title={r.message}>
                      {r.message || '—'}
                    </Text>
                  </Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="runs" />}
      <Modal opened={confirming} onClose={() => setConfirming(false)} title={`Cancel ${selected.size} run${selected.size === 1 ? '' : 's'}?`} centered>
        <Stack>
          <Text size="sm">
            Each selected run stops at its next item boundary and ends CANCELLED; what it committed stays. The request is recorded as one entry of the audit
            log.
          </Text>
          <Group justify="flex-end">
            <Button variant="default" onClick={() => setConfirming(false)}>
              Keep them running
            </Button>
            <Button color="red" onClick={() => void doCancel()} data-testid="runs-cancel-confirm">
              Cancel {selected.size} run{selected.size === 1 ? '' : 's'}
            </Button>
          </Group>
        </Stack>
      </Modal>
    </Stack>
  );
}
