// The audit log, newest first: every mutation with its actor, target, arguments and outcome.
// Filters live in the URL (so a filtered view can be shared); a row opens to show the stored
// arguments, which the server capped and redacted when it wrote them.
import { ActionIcon, Anchor, Badge, Button, Code, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { IconChevronDown, IconChevronRight, IconLock } from '@tabler/icons-react';
import { Fragment, useEffect, useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { useQuery } from 'urql';

import { AUDIT_FILTER_KEYS, auditFilterInput, auditFiltersFrom, auditTargetLink, AuditLogQuery, type AuditFilters } from '../api/audit';
import { runPath } from '../api/runs';
import { useViewer } from '../auth/AuthContext';
import { Pager } from '../components/Pager';
import { Empty, ErrorAlert, Loading } from '../components/QueryState';
import { DateTime } from '../components/Time';
import { useCursorPager } from '../hooks/useCursorPager';
import { roleReason } from '../model/status';

/** outcomeColor colours an audit outcome: done (green), waiting (blue), refused (red), other refusals (orange). */
export function outcomeColor(outcome: string): string {
  const o = outcome.toUpperCase();
  if (['OK', 'APPROVED', 'EXECUTED', 'CONFIRMED', 'NOT_APPLIED'].includes(o)) return 'green';
  if (o === 'PENDING_APPROVAL') return 'blue';
  if (['FORBIDDEN', 'UNAUTHENTICATED', 'RATE_LIMITED', 'ERROR', 'BLOCKED'].includes(o)) return 'red';
  return 'orange';
}

/** runPathFromNumber is a run's console URL from its number (the audit log's run:<n>). */
function runPathFromNumber(n: string): string {
  return runPath(btoa(`Run:${n}`));
}

const LABELS: Record<keyof AuditFilters, string> = {
  actor: 'Actor',
  action: 'Action',
  target: 'Target',
  outcome: 'Outcome',
  since: 'From',
  until: 'Until',
};

const PLACEHOLDERS: Record<keyof AuditFilters, string> = {
  actor: 'token name',
  action: 'startJob',
  target: 'job:payouts, run:42',
  outcome: 'ok, FORBIDDEN',
  since: '',
  until: '',
};

function FilterBar({ filters, errors, onApply }: { filters: AuditFilters; errors: Partial<Record<keyof AuditFilters, string>>; onApply: (f: AuditFilters) => void }) {
  const [draft, setDraft] = useState<AuditFilters>(filters);
  useEffect(() => setDraft(filters), [filters]);
  const empty: AuditFilters = { actor: '', action: '', target: '', outcome: '', since: '', until: '' };
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        onApply(draft);
      }}
      data-testid="audit-filters"
    >
      <Group align="flex-end" gap="xs">
        {AUDIT_FILTER_KEYS.map((k) => (
          <TextInput
            key={k}
            label={LABELS[k]}
            placeholder={PLACEHOLDERS[k]}
            type={k === 'since' || k === 'until' ? 'datetime-local' : 'text'}
            step={k === 'since' || k === 'until' ? 1 : undefined}
            size="xs"
            w={k === 'since' || k === 'until' ? 200 : 150}
            maxLength={200}
            value={draft[k]}
            error={errors[k]}
            onChange={(e) => {
              const v = e.currentTarget.value;
              setDraft((d) => ({ ...d, [k]: v }));
            }}
            data-testid={`audit-filter-${k}`}
          />
        ))}
        <Button type="submit" size="xs" data-testid="audit-filter-apply">
          Filter
        </Button>
        <Button variant="subtle" size="xs" onClick={() => onApply(empty)} data-testid="audit-filter-clear">
          Clear
        </Button>
      </Group>
    </form>
  );
}

function AuditTable() {
  const pager = useCursorPager();
  const [params, setParams] = useSearchParams();
  const filters = auditFiltersFrom(params);
  const { filter, errors } = auditFilterInput(filters);
  const [open, setOpen] = useState<Set<string>>(new Set());
  const [{ data, fetching, error }, refetch] = useQuery({
    query: AuditLogQuery,
    variables: { filter, first: 50, after: pager.after },
    requestPolicy: 'cache-and-network',
  });
  const conn = data?.auditLog;
  const filtered = Object.keys(filter).length > 0;
  const toggle = (id: string) =>
    setOpen((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const apply = (f: AuditFilters) => {
    const next = new URLSearchParams();
    for (const k of AUDIT_FILTER_KEYS) if (f[k].trim()) next.set(k, f[k].trim());
    pager.reset();
    setParams(next);
  };
  /** Clicking an actor, action, target or outcome filters on it. */
  const by = (k: keyof AuditFilters, v: string) => apply({ ...filters, [k]: v });
  return (
    <Stack>
      <FilterBar filters={filters} errors={errors} onApply={apply} />
      {error && <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />}
      {fetching && !conn && <Loading lines={8} label="Loading the audit log" />}
      {conn && conn.nodes.length === 0 && (
        <Empty
          title={filtered ? 'No entry matches these filters' : 'Nothing audited yet'}
          description={filtered ? 'Clear a filter to see more.' : 'Every mutation is recorded here with its actor.'}
        />
      )}
      {conn && conn.nodes.length > 0 && (
        <div className="table-wrap" data-testid="audit-table-wrap">
          <Table striped highlightOnHover miw={900} verticalSpacing={6} data-testid="audit-table">
            <Table.Thead>
              <Table.Tr>
                <Table.Th w={36} />
                <Table.Th>When</Table.Th>
                <Table.Th>Actor</Table.Th>
                <Table.Th>Action</Table.Th>
                <Table.Th>Target</Table.Th>
                <Table.Th>Outcome</Table.Th>
                <Table.Th>Arguments</Table.Th>
              </Table.Tr>
            </Table.Thead>
            <Table.Tbody>
              {conn.nodes.map((e) => {
                const expanded = open.has(e.id);
                const link = auditTargetLink(e.target, runPathFromNumber);
                return (
                  <Fragment key={e.id}>
                    <Table.Tr data-testid="audit-row" data-expanded={expanded ? 'true' : 'false'}>
                      <Table.Td>
                        <ActionIcon
                          variant="subtle"
                          size="sm"
                          aria-expanded={expanded}
                          aria-label={expanded ? 'Hide arguments' : 'Show arguments'}
                          onClick={() => toggle(e.id)}
                          data-testid="audit-expand"
                        >
                          {expanded ? <IconChevronDown size={16} /> : <IconChevronRight size={16} />}
                        </ActionIcon>
                      </Table.Td>
                      <Table.Td style={{ whiteSpace: 'nowrap' }}>
                        <DateTime iso={e.createdAt} size="sm" />
                      </Table.Td>
                      <Table.Td style={{ whiteSpace: 'nowrap' }}>
                        <Anchor component="button" type="button" size="sm" fw={600} onClick={() => by('actor', e.actor)} title="Show only this actor">
                          {e.actor}
                        </Anchor>
                      </Table.Td>
                      <Table.Td>
                        <Anchor component="button" type="button" onClick={() => by('action', e.action)} title="Show only this action">
                          <Code>{e.action}</Code>
                        </Anchor>
                      </Table.Td>
                      <Table.Td>
                        <Group gap={6} wrap="nowrap">
                          {link ? (
                            <Anchor component={Link} to={link.to} size="sm" data-testid="audit-target-link">
                              {e.target}
                            </Anchor>
                          ) : (
                            <Text size="sm">{e.target}</Text>
                          )}
                          <Anchor component="button" type="button" size="xs" c="dimmed" onClick={() => by('target', e.target)} title="Show only this target">
                            filter
                          </Anchor>
                        </Group>
                      </Table.Td>
                      <Table.Td>
                        <Badge
                          color={outcomeColor(e.outcome)}
                          variant="light"
                          style={{ minWidth: 'max-content', cursor: 'pointer' }}
                          onClick={() => by('outcome', e.outcome)}
                          title="Show only this outcome"
                        >
                          {e.outcome}
                        </Badge>
                      </Table.Td>
                      <Table.Td maw={360}>
                        <Group gap={6} wrap="nowrap">
                          {e.truncated && (
                            <Badge size="xs" color="yellow" variant="light" data-testid="audit-truncated" style={{ flexShrink: 0, overflow: 'visible' }}>
                              truncated
                            </Badge>
                          )}
                          <Text className="mono" lineClamp={1} style={{ minWidth: 0 }}>
                            {JSON.stringify(e.arguments)}
                          </Text>
                        </Group>
                      </Table.Td>
                    </Table.Tr>
                    {expanded && (
                      <Table.Tr data-testid="audit-args-row">
                        <Table.Td />
                        <Table.Td colSpan={6}>
                          <Stack gap={4}>
                            {e.truncated && (
                              <Text size="xs" c="dimmed">
                                Cut to 8 KB when stored
                                {typeof e.arguments['_originalBytes'] === 'number' ? ` (the request held ${String(e.arguments['_originalBytes'])} bytes)` : ''}.
                                Secrets are stored as [REDACTED].
                              </Text>
                            )}
                            <pre className="audit-args" data-testid="audit-args">
                              {JSON.stringify(e.arguments, null, 2)}
                            </pre>
                          </Stack>
                        </Table.Td>
                      </Table.Tr>
                    )}
                  </Fragment>
                );
              })}
            </Table.Tbody>
          </Table>
        </div>
      )}
      {conn && <Pager pager={pager} hasNextPage={conn.pageInfo.hasNextPage} endCursor={conn.pageInfo.endCursor} label="audit" />}
    </Stack>
  );
}

export function AuditPage() {
  // Reading needs the role only: a signed-out console still shows what it loaded.
  const reason = roleReason(useViewer().role, 'OPERATOR');
  return (
    <Stack>
      <Group justify="space-between">
        <div>
          <Title order={1} size="h2">
            Audit log
          </Title>
          <Text c="dimmed" size="sm">
            Every mutation, who asked and what came of it — refusals included. Times are in your zone.
          </Text>
        </div>
      </Group>
      {reason ? <Empty title="The audit log is for operators" description={reason} icon={<IconLock size={28} />} /> : <AuditTable />}
    </Stack>
  );
}
