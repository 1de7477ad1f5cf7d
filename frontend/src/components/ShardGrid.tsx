// A sharded run's shards, live: one cell per shard with its key, status (colour and word), the
// instance holding it, its progress, checkpoint and lease age, and a line summing them up.
import { Badge, Card, Code, Group, Progress, SimpleGrid, Stack, Text, Title, Tooltip } from '@mantine/core';

import type { RunShardFieldsFragment, ShardStatus } from '../gql/graphql';
import { shardStatusMeta } from '../model/status';
import { formatDuration, formatNumber } from '../model/time';

/** shardCounts sums shards up by where they are: held (claimed or running), waiting, done, and the other ends. */
export function shardCounts(shards: readonly { status: ShardStatus }[]): { running: number; pending: number; done: number; failed: number; stopped: number } {
  const c = { running: 0, pending: 0, done: 0, failed: 0, stopped: 0 };
  for (const s of shards) {
    if (s.status === 'RUNNING' || s.status === 'STARTING') c.running++;
    else if (s.status === 'PENDING') c.pending++;
    else if (s.status === 'SUCCEEDED') c.done++;
    else if (s.status === 'FAILED') c.failed++;
    else c.stopped++;
  }
  return c;
}

/** shardSummary is the line above the grid: "16 shards · 3 running · 2 pending · 11 done". */
export function shardSummary(shards: readonly { status: ShardStatus }[]): string {
  const c = shardCounts(shards);
  const parts = [`${shards.length} shard${shards.length === 1 ? '' : 's'}`, `${c.running} running`, `${c.pending} pending`, `${c.done} done`];
  if (c.failed > 0) parts.push(`${c.failed} failed`);
  if (c.stopped > 0) parts.push(`${c.stopped} stopped`);
  return parts.join(' · ');
}

/**
 * leaseAgeMs is how long ago a held shard's holder last renewed its lease: the server's age
 * (by the database clock) when the state arrived, plus the time since. Null when no one holds
 * the shard.
 */
export function leaseAgeMs(shard: Pick<RunShardFieldsFragment, 'leaseAgeSeconds'>, receivedAt: number, now: number): number | null {
  if (shard.leaseAgeSeconds === null || shard.leaseAgeSeconds === undefined) return null;
  return shard.leaseAgeSeconds * 1000 + Math.max(0, now - receivedAt);
}

function ShardCell({ shard, receivedAt, now }: { shard: RunShardFieldsFragment; receivedAt: number; now: number }) {
  const meta = shardStatusMeta(shard.status);
  const pct = shard.percent ?? (shard.total ? Math.min(100, (shard.processed / shard.total) * 100) : null);
  const age = leaseAgeMs(shard, receivedAt, now);
  return (
    <Card
      withBorder
      radius="sm"
      padding="xs"
      data-testid="shard-cell"
      data-shard-key={shard.key}
      data-shard-status={shard.status}
      style={{ borderLeft: `4px solid var(--mantine-color-${meta.color}-6)`, minWidth: 0 }}
    >
      <Stack gap={4}>
        <Tooltip label={shard.spec || `shard ${shard.index + 1}`} withArrow disabled={!shard.spec}>
          <Text size="sm" fw={700} className="mono" truncate title={shard.key} data-testid="shard-key">
            {shard.key}
          </Text>
        </Tooltip>
        <Group justify="space-between" gap={4} wrap="nowrap">
          <Tooltip label={meta.description} withArrow>
            <Badge size="sm" color={meta.color} variant="light" style={{ flexShrink: 0 }} data-testid="shard-status">
              {meta.label}
            </Badge>
          </Tooltip>
          {pct !== null && (
            <Text size="xs" fw={600}>
              {pct.toFixed(0)}%
            </Text>
          )}
        </Group>
        <Progress value={pct ?? 0} color={meta.color} size="sm" aria-label={`shard ${shard.key} progress`} striped={pct === null && shard.status === 'RUNNING'} />
        <Text size="xs" data-testid="shard-progress">
          {formatNumber(shard.processed)}
          {shard.total !== null && shard.total !== undefined ? ` / ${formatNumber(shard.total)}` : ''}
          {shard.failed > 0 ? ` · ${formatNumber(shard.failed)} failed` : ''}
        </Text>
        <Text size="xs" c="dimmed" truncate data-testid="shard-holder">
          {shard.instance ? (
            <>
              on <Code>{shard.instance}</Code>
            </>
          ) : shard.status === 'PENDING' && shard.attempt > 0 ? (
            `handed back (attempt ${shard.attempt + 1})`
          ) : (
            'no holder'
          )}
        </Text>
        <Text size="xs" c="dimmed" truncate data-testid="shard-checkpoint">
          checkpoint <span className="mono">{shard.checkpoint || '—'}</span>
        </Text>
        <Text size="xs" c={age !== null && age > 20_000 ? 'orange' : 'dimmed'} data-testid="shard-lease-age" data-lease-age-ms={age === null ? '' : Math.round(age)}>
          {age === null ? 'lease: —' : `lease renewed ${formatDuration(age)} ago`}
        </Text>
      </Stack>
    </Card>
  );
}

/** ShardGrid shows a sharded run's shards, one cell each, in plan order. */
export function ShardGrid({ shards, receivedAt, now }: { shards: readonly RunShardFieldsFragment[]; receivedAt: number; now: number }) {
  if (shards.length === 0) return null;
  return (
    <Card withBorder radius="md" data-testid="shard-grid">
      <Group justify="space-between" mb="sm" wrap="wrap">
        <Title order={2} size="h4">
          Shards
        </Title>
        <Text size="sm" c="dimmed" data-testid="shard-summary">
          {shardSummary(shards)}
        </Text>
      </Group>
      <SimpleGrid cols={{ base: 2, sm: 3, md: 4, lg: 6 }} spacing="xs">
        {shards.map((s) => (
          <ShardCell key={s.key} shard={s} receivedAt={receivedAt} now={now} />
        ))}
      </SimpleGrid>
    </Card>
  );
}
