// A job's history over a chosen window (24 h, 7 d, 30 d), drawn as charts: runs per status,
// duration p50/p95, throughput, failure rate by class and downstream error rate.
import { Box, Card, Group, SegmentedControl, SimpleGrid, Stack, Text, Title, useMantineTheme } from '@mantine/core';
import { useElementSize } from '@mantine/hooks';
import { useEffect, useState, type ReactElement, type ReactNode } from 'react';
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import { useQuery } from 'urql';

import {
  ENDED_STATUSES,
  HISTORY_WINDOWS,
  historyRows,
  historyTotals,
  JobHistoryQuery,
  type HistoryRow,
  type JobHistoryData,
} from '../api/history';
import type { HistoryWindow, LedgerState } from '../gql/graphql';
import { LEDGER_STATES, ledgerStateMeta, runStatusMeta } from '../model/status';
import { formatDateTime, formatNumber, formatPercent, formatSeconds } from '../model/time';
import { ErrorAlert, Loading } from './QueryState';

const CHART_HEIGHT = 220;
/** The width a chart takes before its box is measured (and in tests, where nothing is laid out). */
const FALLBACK_WIDTH = 480;

/** ChartCard is one chart with its title, what its series mean, and a line of totals. */
function ChartCard({ title, meaning, totals, testId, children }: { title: string; meaning: string; totals: ReactNode; testId: string; children: (width: number) => ReactElement }) {
  const { ref, width } = useElementSize();
  return (
    <Card withBorder radius="md" data-testid={testId}>
      <Title order={3} size="h5">
        {title}
      </Title>
      <Text size="xs" c="dimmed" mb={4}>
        {meaning}
      </Text>
      <Box ref={ref} w="100%" h={CHART_HEIGHT}>
        {children(width > 0 ? width : FALLBACK_WIDTH)}
      </Box>
      <Text size="xs" mt={4} data-testid={`${testId}-totals`}>
        {totals}
      </Text>
    </Card>
  );
}

/** Colours of the failure classes, distinct side by side in a stack (the ledger's own colours repeat red). */
const FAILURE_COLORS: Record<string, string> = {
  TRANSIENT: 'orange',
  VALIDATION_REJECTED: 'red',
  CONFLICT: 'violet',
  AMBIGUOUS_EFFECT: 'grape',
  POLICY_BLOCKED: 'pink',
  BUG_SUSPECTED: 'indigo',
};
const OTHER_COLORS = ['cyan', 'lime', 'yellow', 'teal', 'gray'];

const failureClassColor = (cls: string, index: number): string => FAILURE_COLORS[cls] ?? OTHER_COLORS[index % OTHER_COLORS.length] ?? 'gray';

/** durationTick writes an axis value in seconds compactly, keeping neighbouring ticks apart: "550ms", "1.5s", "42s", "3m 05s". */
export function durationTick(v: number): string {
  if (v < 1) return `${Math.round(v * 1000)}ms`;
  if (v < 10) return `${Math.round(v * 10) / 10}s`;
  if (v < 60) return `${Math.round(v)}s`;
  return formatSeconds(v);
}

const runs = (n: number): string => `${formatNumber(n)} ${n === 1 ? 'run' : 'runs'}`;

const failureClassLabel = (cls: string): string =>
  (LEDGER_STATES as string[]).includes(cls) ? ledgerStateMeta(cls as LedgerState).label : cls;

const axisTick = { fontSize: 11 };

/** HistoryCharts draws a loaded history. */
export function HistoryCharts({ history, timeZone }: { history: JobHistoryData; timeZone?: string }) {
  const theme = useMantineTheme();
  const color = (name: string, shade = 6): string => theme.colors[name]?.[shade] ?? name;
  const rows: HistoryRow[] = historyRows(history, timeZone);
  const totals = historyTotals(history);
  const win = HISTORY_WINDOWS.find((w) => w.value === history.window);
  const bucketWords = win ? `${win.bucket} buckets` : `${history.bucketSeconds} s buckets`;
  const tooltipLabel = (_: unknown, payload: readonly { payload?: HistoryRow }[]): string => {
    const r = payload[0]?.payload;
    return r ? formatDateTime(new Date(r.t).toISOString(), timeZone) : '';
  };
  const common = (width: number) => ({ width, height: CHART_HEIGHT, data: rows, margin: { top: 8, right: 12, bottom: 0, left: 0 } });
  const xAxis = <XAxis dataKey="label" tick={axisTick} interval="preserveStartEnd" minTickGap={16} />;
  const grid = <CartesianGrid strokeDasharray="3 3" stroke="var(--mantine-color-default-border)" />;
  const items = totals.activeSeconds > 0 ? totals.processed / totals.activeSeconds : null;

  return (
    <Stack gap="sm">
      <Text size="xs" c="dimmed" data-testid="history-range">
        {formatDateTime(history.from, timeZone)} → {formatDateTime(history.to, timeZone)}, {rows.length} {bucketWords}; a run counts in the bucket in which it ended.
      </Text>
      <SimpleGrid cols={{ base: 1, md: 2 }} spacing="sm">
        <ChartCard
          testId="history-runs"
          title="Runs per status"
          meaning="Runs that ended in each bucket, stacked by how they ended."
          totals={
            <>
              {runs(totals.ended)} ended
              {ENDED_STATUSES.filter((s) => totals.runs[s] > 0).map((s) => `, ${formatNumber(totals.runs[s])} ${runStatusMeta(s).label.toLowerCase()}`).join('')}
            </>
          }
        >
          {(w) => (
            <BarChart {...common(w)}>
              {grid}
              {xAxis}
              <YAxis allowDecimals={false} tick={axisTick} width={40} label={{ value: 'runs', angle: -90, position: 'insideLeft', fontSize: 11 }} />
              <Tooltip labelFormatter={tooltipLabel} />
              <Legend wrapperStyle={{ fontSize: 11 }} />
              {ENDED_STATUSES.map((s) => (
                <Bar key={s} dataKey={`runs.${s}`} name={runStatusMeta(s).label} stackId="runs" fill={color(runStatusMeta(s).color)} isAnimationActive={false} />
              ))}
            </BarChart>
          )}
        </ChartCard>

        <ChartCard
          testId="history-duration"
          title="Duration p50 / p95"
          meaning="Wall time of the runs that ended in each bucket, requested to ended; a gap: no run ended."
          totals={<>{runs(totals.ended)} measured</>}
        >
          {(w) => (
            <LineChart {...common(w)}>
              {grid}
              {xAxis}
              <YAxis tick={axisTick} width={56} tickFormatter={durationTick} label={{ value: 'duration', angle: -90, position: 'insideLeft', fontSize: 11 }} />
              <Tooltip labelFormatter={tooltipLabel} formatter={(v) => (typeof v === 'number' ? durationTick(v) : String(v))} />
              <Legend wrapperStyle={{ fontSize: 11 }} />
              <Line dataKey="p50" name="p50" stroke={color('blue')} dot={rows.length <= 30} connectNulls={false} isAnimationActive={false} />
              <Line dataKey="p95" name="p95" stroke={color('orange')} dot={rows.length <= 30} connectNulls={false} isAnimationActive={false} />
            </LineChart>
          )}
        </ChartCard>

        <ChartCard
          testId="history-throughput"
          title="Items per second"
          meaning="Items processed by the runs that ended in each bucket, divided by their active time (activated to ended)."
          totals={
            <>
              {formatNumber(totals.processed)} items in {formatSeconds(totals.activeSeconds)} active
              {items !== null ? ` = ${items.toFixed(2)} items/s` : ''}
            </>
          }
        >
          {(w) => (
            <BarChart {...common(w)}>
              {grid}
              {xAxis}
              <YAxis tick={axisTick} width={48} label={{ value: 'items/s', angle: -90, position: 'insideLeft', fontSize: 11 }} />
              <Tooltip labelFormatter={tooltipLabel} formatter={(v) => (typeof v === 'number' ? `${v.toFixed(2)} items/s` : String(v))} />
              <Bar dataKey="itemsPerSecond" name="items/s" fill={color('teal')} isAnimationActive={false} />
            </BarChart>
          )}
        </ChartCard>

        <ChartCard
          testId="history-failures"
          title="Failure rate by class"
          meaning="Failed items of the runs that ended in each bucket, per class, as a share of the items they processed. Error rows are kept 30 days by default."
          totals={
            totals.failed === 0 ? (
              <>no failed items</>
            ) : (
              <>
                {formatNumber(totals.failed)} failed items of {formatNumber(totals.processed)}
                {Object.entries(totals.failures)
                  .sort(([a], [b]) => a.localeCompare(b))
                  .map(([c, n]) => `, ${formatNumber(n)} ${failureClassLabel(c).toLowerCase()}`)
                  .join('')}
              </>
            )
          }
        >
          {(w) => (
            <BarChart {...common(w)}>
              {grid}
              {xAxis}
              <YAxis tick={axisTick} width={48} unit="%" label={{ value: 'of items', angle: -90, position: 'insideLeft', fontSize: 11 }} />
              <Tooltip labelFormatter={tooltipLabel} formatter={(v) => (typeof v === 'number' ? formatPercent(v) : String(v))} />
              <Legend wrapperStyle={{ fontSize: 11 }} />
              {history.failureClasses.map((c, i) => (
                <Bar key={c} dataKey={`failurePct.${c}`} name={failureClassLabel(c)} stackId="failures" fill={color(failureClassColor(c, i))} isAnimationActive={false} />
              ))}
            </BarChart>
          )}
        </ChartCard>

        <ChartCard
          testId="history-downstream"
          title="Downstream error rate"
          meaning="Calls to outside systems in each bucket that failed transient or in doubt (5xx, 429, timeouts), as a share of all calls; a gap: no call. Call statistics are kept 7 days by default."
          totals={
            <>
              {formatNumber(totals.downstreamErrors)} of {formatNumber(totals.calls)} calls failed downstream
              {totals.calls > 0 ? ` (${formatPercent((totals.downstreamErrors / totals.calls) * 100)})` : ''}
            </>
          }
        >
          {(w) => (
            <LineChart {...common(w)}>
              {grid}
              {xAxis}
              <YAxis tick={axisTick} width={48} unit="%" label={{ value: 'of calls', angle: -90, position: 'insideLeft', fontSize: 11 }} />
              <Tooltip labelFormatter={tooltipLabel} formatter={(v) => (typeof v === 'number' ? formatPercent(v) : String(v))} />
              <Line dataKey="downstreamPct" name="downstream errors" stroke={color('red')} dot={rows.length <= 30} connectNulls={false} isAnimationActive={false} />
            </LineChart>
          )}
        </ChartCard>
      </SimpleGrid>
    </Stack>
  );
}

/**
 * JobHistory is the job page's history panel: a window switch and the charts of that window.
 * A change of refreshKey (a run of the job started or ended) reads the history again.
 */
export function JobHistory({ jobName, timeZone, refreshKey = 0 }: { jobName: string; timeZone?: string; refreshKey?: number }) {
  const [selected, setSelected] = useState<HistoryWindow>('LAST_24_HOURS');
  const [{ data, fetching, error }, refetch] = useQuery({ query: JobHistoryQuery, variables: { name: jobName, window: selected }, requestPolicy: 'cache-and-network' });
  useEffect(() => {
    if (refreshKey > 0) refetch({ requestPolicy: 'network-only' });
  }, [refreshKey, refetch]);
  const history = data?.job?.history;
  const shown = history && history.window === selected ? history : undefined;
  return (
    <Stack gap="sm" data-testid="job-history">
      <Group justify="space-between">
        <Title order={2} size="h4">
          History
        </Title>
        <SegmentedControl
          size="xs"
          value={selected}
          onChange={(v) => setSelected(v as HistoryWindow)}
          data={HISTORY_WINDOWS.map((w) => ({ value: w.value, label: w.label }))}
          aria-label="History window"
          data-testid="history-window"
        />
      </Group>
      {error && !shown ? (
        <ErrorAlert error={error} onRetry={() => refetch({ requestPolicy: 'network-only' })} />
      ) : !shown ? (
        fetching ? <Loading lines={4} label="Loading the history" /> : null
      ) : (
        <HistoryCharts history={shown} timeZone={timeZone} />
      )}
    </Stack>
  );
}
