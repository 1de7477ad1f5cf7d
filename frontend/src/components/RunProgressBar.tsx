// A run's progress: bar, percent and counts. With an unknown total the bar is indeterminate.
import { Group, Progress, Stack, Text } from '@mantine/core';

import type { RunStatus } from '../gql/graphql';
import { runStatusMeta } from '../model/status';
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

export function RunProgressBar({ progress, status, size = 'lg', counts = true }: { progress: ProgressLike; status: RunStatus; size?: 'sm' | 'md' | 'lg' | 'xl'; counts?: boolean }) {
  const pct = progressPercent(progress);
  const meta = runStatusMeta(status);
  const label = pct === null ? `${formatNumber(progress.processed)} items` : formatPercent(pct);
  return (
    <Stack gap={4} data-testid="run-progress" data-percent={pct ?? ''} data-processed={progress.processed} data-status={status}>
      <Group justify="space-between" gap="xs">
        <Text size="sm" fw={600} data-testid="run-percent">
          {label}
        </Text>
        <Text size="xs" c="dimmed">
          {formatNumber(progress.processed)}
          {progress.total !== null && progress.total !== undefined ? ` / ${formatNumber(progress.total)}` : ''} processed
        </Text>
      </Group>
      <Progress
        value={pct ?? 100}
        color={meta.color}
        size={size}
        striped={meta.active}
        animated={meta.active && pct === null}
        aria-label={`Progress ${label}`}
        transitionDuration={200}
      />
      {counts && (
        <Group gap="md">
          <Text size="xs" c="green">
            {formatNumber(progress.succeeded)} succeeded
          </Text>
          <Text size="xs" c={progress.failed > 0 ? 'red' : 'dimmed'}>
            {formatNumber(progress.failed)} failed
          </Text>
          <Text size="xs" c="dimmed">
            {formatNumber(progress.skipped)} skipped
          </Text>
          <Text size="xs" c={progress.ambiguous > 0 ? 'grape' : 'dimmed'}>
            {formatNumber(progress.ambiguous)} ambiguous
          </Text>
        </Group>
      )}
    </Stack>
  );
}
