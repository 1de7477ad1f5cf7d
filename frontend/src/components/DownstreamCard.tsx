// One downstream's card: its live calls/s with a sparkline of the last minutes, waits,
// throttles and errors of the last minute, the effective rate against the limit, what is in
// flight against the concurrency, the quota used, and its state (PAUSED, DEGRADED, blocked by a
// Retry-After). The limits editor opens inside it.
import { Alert, Badge, Button, Card, Collapse, Group, SimpleGrid, Stack, Text, Title } from '@mantine/core';
import { IconAdjustments, IconAlertTriangle } from '@tabler/icons-react';
import { useState, type ReactNode } from 'react';

import { concurrencyLimit, quotaLimit, rate, rateLimit, slowedByPushback, waitsText, type Downstream } from '../model/downstreams';
import { DownstreamEditor } from './DownstreamEditor';
import { Sparkline } from './Sparkline';
import { DateTime, TimeAgo } from './Time';

function Figure({ label, children, testid, hint }: { label: string; children: ReactNode; testid: string; hint?: ReactNode }) {
  return (
    <Stack gap={0} data-testid={testid} style={{ minWidth: 0 }}>
      <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
        {label}
      </Text>
      <Text size="sm" fw={500} style={{ overflowWrap: 'anywhere' }}>
        {children}
      </Text>
      {hint && (
        <Text size="xs" c="dimmed">
          {hint}
        </Text>
      )}
    </Stack>
  );
}

/** effectiveText is the rate calls start at against the limit: "35/s of 50/s". */
function effectiveText(d: Downstream): string {
  const { ratePerSecond } = d.limits;
  if (ratePerSecond === null) return 'no rate limit';
  const eff = d.stats.effectiveRate ?? ratePerSecond;
  return `${rate(eff)} of ${rate(ratePerSecond)}`;
}

export function DownstreamCard({ downstream: d, history, onSaved }: { downstream: Downstream; history: readonly number[]; onSaved?: () => void }) {
  const [editing, setEditing] = useState(false);
  const s = d.stats;
  const l = d.limits;
  const slowed = slowedByPushback(d);
  const blocked = s.blockedUntil !== null && Date.parse(s.blockedUntil) > Date.now();
  const quotaSpent = l.quota !== null && s.quotaUsed >= l.quota;
  const color = s.degraded ? 'red' : l.paused ? 'yellow' : slowed || blocked || quotaSpent ? 'orange' : 'blue';
  return (
    <Card
      withBorder
      radius="md"
      data-testid="downstream-card"
      data-name={d.name}
      data-paused={l.paused ? 'true' : 'false'}
      data-degraded={s.degraded ? 'true' : 'false'}
      style={{ borderLeft: `4px solid var(--mantine-color-${color}-6)` }}
    >
      <Stack gap="sm">
        <Group justify="space-between" align="flex-start" wrap="wrap" gap="xs">
          <Group gap="xs" wrap="wrap">
            <Title order={3} size="h4" style={{ overflowWrap: 'anywhere' }}>
              {d.name}
            </Title>
            {l.paused && (
              <Badge color="yellow" data-testid="ds-paused">
                PAUSED
              </Badge>
            )}
            {s.degraded && (
              <Badge color="red" data-testid="ds-degraded">
                DEGRADED
              </Badge>
            )}
            {quotaSpent && (
              <Badge color="orange" data-testid="ds-quota-spent">
                quota spent
              </Badge>
            )}
            {slowed && (
              <Badge color="orange" variant="light" data-testid="ds-pushback">
                slowed by pushback
              </Badge>
            )}
          </Group>
          <Button
            size="xs"
            variant={editing ? 'filled' : 'default'}
            leftSection={<IconAdjustments size={16} />}
            onClick={() => setEditing((e) => !e)}
            aria-expanded={editing}
            data-testid="ds-edit"
          >
            {editing ? 'Close editor' : 'Edit limits'}
          </Button>
        </Group>
        {s.degraded && (
          <Alert
            color="red"
            variant="light"
            icon={<IconAlertTriangle size={18} />}
            title="Redis unreachable: instances limit on their local share"
            data-testid="ds-degraded-alert"
          >
            An instance cannot reach Redis, so it holds this downstream to its share of each limit (the limit divided by the live instances). The
            limits still hold; calls may run slower than they could.
          </Alert>
        )}
        {l.paused && (
          <Text size="sm" c="yellow.8" data-testid="ds-paused-note">
            Paused: every call to {d.name} waits at its item boundary. Runs wait; they do not fail.
          </Text>
        )}
        <Group gap="lg" wrap="wrap" align="center">
          <Stack gap={0}>
            <Text size="xs" c="dimmed" tt="uppercase" fw={600}>
              Calls/s (last 10 s)
            </Text>
            <Text fz={28} fw={700} lh={1.1} data-testid="ds-calls-per-second" data-value={s.callsPerSecond}>
              {rate(s.callsPerSecond)}
            </Text>
          </Stack>
          <Sparkline values={history} label={`Calls per second of ${d.name}, one sample a second`} width={220} height={40} />
        </Group>
        <SimpleGrid cols={{ base: 2, sm: 3, lg: 4 }} spacing="sm" verticalSpacing="xs">
          <Figure label="Effective rate" testid="ds-effective" hint={slowed ? 'slowed by pushback (429/503), recovering' : rateLimit(l)}>
            {effectiveText(d)}
          </Figure>
          <Figure label="In flight" testid="ds-in-flight" hint={concurrencyLimit(l)}>
            {l.concurrency === null ? s.inFlight : `${s.inFlight} of ${l.concurrency}`}
          </Figure>
          <Figure label={`Waits (last ${s.windowSeconds} s)`} testid="ds-waits">
            {waitsText(s)}
          </Figure>
          <Figure label="Calls" testid="ds-calls" hint={`last ${s.windowSeconds} s`}>
            {s.calls.toLocaleString('en-US')}
          </Figure>
          <Figure label="Throttled" testid="ds-throttled" hint="answered 429 or 503">
            <Text span c={s.throttled > 0 ? 'orange.7' : undefined} inherit>
              {s.throttled.toLocaleString('en-US')}
            </Text>
          </Figure>
          <Figure label="Errors" testid="ds-errors" hint="other failures">
            <Text span c={s.errors > 0 ? 'red.7' : undefined} inherit>
              {s.errors.toLocaleString('en-US')}
            </Text>
          </Figure>
          <Figure label="Quota" testid="ds-quota" hint={quotaSpent ? 'spent: calls wait for the next window' : quotaLimit(l)}>
            {l.quota === null ? 'none' : `${s.quotaUsed.toLocaleString('en-US')} of ${l.quota.toLocaleString('en-US')}`}
          </Figure>
          <Figure label="Blocked until" testid="ds-blocked" hint={blocked ? 'Retry-After: every call waits until then' : undefined}>
            {blocked && s.blockedUntil ? <DateTime iso={s.blockedUntil} size="sm" /> : 'not blocked'}
          </Figure>
        </SimpleGrid>
        <Stack gap={0}>
          <Text size="xs" c="dimmed" data-testid="ds-changed">
            {d.updatedBy ? (
              <>
                Limits changed by <b>{d.updatedBy}</b> {d.updatedAt && <TimeAgo iso={d.updatedAt} size="xs" />} · version {d.version}
              </>
            ) : (
              <>The code&apos;s defaults hold (version {d.version}).</>
            )}
          </Text>
          <Text size="xs" c="dimmed" data-testid="ds-defaults">
            Defaults in code: rate {rateLimit(d.defaults)} · concurrency {concurrencyLimit(d.defaults)} ·{' '}
            {d.defaults.quota === null ? 'no quota' : `quota ${quotaLimit(d.defaults)}`}
          </Text>
        </Stack>
        <Collapse expanded={editing}>{editing && <DownstreamEditor key={`${d.name}:${d.version}`} downstream={d} onSaved={onSaved} />}</Collapse>
      </Stack>
    </Card>
  );
}
