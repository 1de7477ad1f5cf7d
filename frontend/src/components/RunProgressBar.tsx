// A run's progress: bar, percent and counts. With an unknown total the bar is indeterminate.
import { Group, Progress, Stack, Text } from '@mantine/core';

import type { RunStatus } from '../gql/graphql';
import { attentionWords, needsAttention, runStatusMeta, succeededCleanly, type Attention } from '../model/status';
import { formatNumber, formatPercent } from '../model/time';

export interface ProgressLike {
  total?: number | null;
  processed: number;
  succeeded: number;
  failed: number;
  skipped: number;
  ambiguous: number;
  percent?: number | null;
}

/** progressPercent is the bar's value: the server's percent, else processed/total, else null. */
export function progressPercent(p: ProgressLike): number | null {
  if (p.percent !== null && p.percent !== undefined) return Math.min(100, Math.max(0, p.percent));
  if (p.total) return Math.min(100, (p.processed / p.total) * 100);
  return null;
}

/** A part of the progress bar: how many items, in which colour. */
export interface BarSection {
  key: 'succeeded' | 'skipped' | 'failed' | 'ambiguous';
  count: number;
  /** Share of the bar, 0 to 100. */
  value: number;
  color: string;
}

/**
 * barSections splits the bar by outcome, so failures never hide in a green bar: succeeded
 * (green), skipped (gray), failed (red), ambiguous (grape), each a share of the total (of the
 * items processed while the total is unknown). Empty parts are left out; null while the total
 * is unknown and nothing was processed.
 */
export function barSections(p: ProgressLike): BarSection[] | null {
  const base = p.total && p.total > 0 ? Math.max(p.total, p.processed) : p.processed;
  if (base <= 0) return null;
  // With the server's percent, the processed items fill that share of the bar: a sharded run's
  // percent is its shards' (their totals may not all be known yet), not processed/total.
  const pct = progressPercent(p);
  if (pct !== null && p.processed > 0 && p.percent !== null && p.percent !== undefined) {
    const parts: [BarSection['key'], number, string][] = [
      ['succeeded', p.succeeded, 'green'],
      ['skipped', p.skipped, 'gray.5'],
      ['failed', p.failed, 'red'],
      ['ambiguous', p.ambiguous, 'grape'],
    ];
    const counted = Math.max(p.processed, p.succeeded + p.skipped + p.failed + p.ambiguous);
    return parts.filter(([, n]) => n > 0).map(([key, count, color]) => ({ key, count, value: (count / counted) * pct, color }));
  }
  const parts: [BarSection['key'], number, string][] = [
    ['succeeded', p.succeeded, 'green'],
    ['skipped', p.skipped, 'gray.5'],
    ['failed', p.failed, 'red'],
    ['ambiguous', p.ambiguous, 'grape'],
  ];
  return parts.filter(([, n]) => n > 0).map(([key, count, color]) => ({ key, count, value: (count / base) * 100, color }));
}

export function RunProgressBar({
  progress,
  status,
  size = 'lg',
  counts = true,
  needsAttention: flag,
  attention,
}: {
  progress: ProgressLike;
  status: RunStatus;
  size?: 'sm' | 'md' | 'lg' | 'xl';
  counts?: boolean;
  needsAttention?: boolean | null;
  attention?: Attention | null;
}) {
  const pct = progressPercent(progress);
  const meta = runStatusMeta(status);
  const label = pct === null ? `${formatNumber(progress.processed)} items` : formatPercent(pct);
  const run = { status, needsAttention: flag, attention };
  const clean = succeededCleanly(run);
  const sections = barSections(progress);
  const indeterminate = meta.active && pct === null;
  const what = attentionWords(attention);
  return (
    <Stack
      gap={4}
      data-testid="run-progress"
      data-percent={pct ?? ''}
      data-processed={progress.processed}
      data-status={status}
      data-clean={String(clean)}
      data-attention={String(needsAttention(run) || progress.failed + progress.ambiguous > 0)}
    >
      <Group justify="space-between" gap="xs">
        <Text size="sm" fw={600} data-testid="run-percent">
          {label}
        </Text>
        <Text size="xs" c="dimmed">
          {formatNumber(progress.processed)}
          {progress.total !== null && progress.total !== undefined ? ` / ${formatNumber(progress.total)}` : ''} processed
        </Text>
      </Group>
      {indeterminate || !sections ? (
        <Progress
          value={pct ?? 100}
          color={meta.color}
          size={size}
          striped={meta.active}
          animated={indeterminate}
          aria-label={`Progress ${label}`}
          transitionDuration={200}
        />
      ) : (
        <Progress.Root size={size} aria-label={`Progress ${label}${what ? `; ${what}` : ''}`}>
          {sections.map((sec) => (
            <Progress.Section
              key={sec.key}
              value={sec.value}
              color={sec.color}
              striped={meta.active}
              animated={false}
              data-testid={`run-progress-${sec.key}`}
              title={`${formatNumber(sec.count)} ${sec.key}`}
            />
          ))}
        </Progress.Root>
      )}
      {counts && (
        <Group gap="md">
          <Text size="xs" c="green">
            {formatNumber(progress.succeeded)} succeeded
          </Text>
          <Text size="xs" c={progress.failed > 0 ? 'red' : 'dimmed'}>
            {formatNumber(progress.failed)} failed
            {attention && attention.rejected > 0 ? ` (${formatNumber(attention.rejected)} rejected)` : ''}
          </Text>
          <Text size="xs" c="dimmed">
            {formatNumber(progress.skipped)} skipped
          </Text>
          <Text size="xs" c={progress.ambiguous > 0 ? 'grape' : 'dimmed'}>
            {formatNumber(progress.ambiguous)} ambiguous
            {attention && attention.ambiguous < progress.ambiguous ? ` (${formatNumber(attention.ambiguous)} still in doubt)` : ''}
          </Text>
        </Group>
      )}
    </Stack>
  );
}
