import { act, fireEvent, screen, within } from '@testing-library/react';
import { useState } from 'react';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fromValue } from 'wonka';
import type { OperationResult } from '@urql/core';

import { historyRows, historyTotals, type JobHistoryData } from '../api/history';
import type { HistoryWindow } from '../gql/graphql';
import { renderWith } from '../test/render';
import { durationTick, JobHistory } from './JobHistory';

type Bucket = JobHistoryData['buckets'][number];

function bucket(start: string, end: string, over: Partial<Bucket> = {}): Bucket {
  return {
    start,
    end,
    runs: [],
    ended: 0,
    durationP50Seconds: null,
    durationP95Seconds: null,
    processed: 0,
    activeSeconds: 0,
    itemsPerSecond: null,
    failures: [],
    failureRate: null,
    calls: 0,
    downstreamErrors: 0,
    rejects: 0,
    downstreamErrorRate: null,
    ...over,
  };
}

// Three hourly buckets: 3 runs, then 2 runs with failures, then nothing.
const day: JobHistoryData = {
  window: 'LAST_24_HOURS',
  bucketSeconds: 3600,
  from: '2026-03-01T00:00:00Z',
  to: '2026-03-01T03:00:00Z',
  now: '2026-03-01T02:30:00Z',
  failureClasses: ['CONFLICT', 'TRANSIENT'],
  buckets: [
    bucket('2026-03-01T00:00:00Z', '2026-03-01T01:00:00Z', {
      runs: [{ status: 'SUCCEEDED', count: 3 }],
      ended: 3,
      durationP50Seconds: 60,
      durationP95Seconds: 90,
      processed: 200,
      activeSeconds: 100,
      itemsPerSecond: 2,
      calls: 100,
      downstreamErrors: 5,
      downstreamErrorRate: 0.05,
    }),
    bucket('2026-03-01T01:00:00Z', '2026-03-01T02:00:00Z', {
      runs: [
        { status: 'SUCCEEDED', count: 1 },
        { status: 'FAILED', count: 1 },
      ],
      ended: 2,
      durationP50Seconds: 120,
      durationP95Seconds: 170,
      processed: 100,
      activeSeconds: 200,
      itemsPerSecond: 0.5,
      failures: [
        { class: 'CONFLICT', count: 2, rate: 0.02 },
        { class: 'TRANSIENT', count: 10, rate: 0.1 },
      ],
      failureRate: 0.12,
      calls: 50,
      downstreamErrors: 10,
      downstreamErrorRate: 0.2,
    }),
    bucket('2026-03-01T02:00:00Z', '2026-03-01T03:00:00Z'),
  ],
};

const week: JobHistoryData = {
  ...day,
  window: 'LAST_7_DAYS',
  bucketSeconds: 21600,
  failureClasses: [],
  buckets: [
    bucket('2026-02-28T18:00:00Z', '2026-03-01T00:00:00Z', {
      runs: [{ status: 'CANCELLED', count: 4 }],
      ended: 4,
    }),
    bucket('2026-03-01T00:00:00Z', '2026-03-01T06:00:00Z'),
  ],
};

/** A client that answers the history query for each window, recording the variables asked. */
function historyClient(asked: Record<string, unknown>[]): Client {
  return {
    executeQuery: (op: { variables: { name: string; window: HistoryWindow } }) => {
      asked.push(op.variables);
      const h = op.variables.window === 'LAST_7_DAYS' ? week : day;
      return fromValue({ operation: op, data: { job: { id: 'Sm9iOmRlbW8=', history: h } }, stale: false, hasNext: false } as unknown as OperationResult);
    },
    executeMutation: () => fromValue({}),
    executeSubscription: () => fromValue({}),
  } as unknown as Client;
}

describe('historyRows', () => {
  it('turns rates into percentages and keeps "nothing to measure" as null, not zero', () => {
    const rows = historyRows(day, 'UTC');
    expect(rows.map((r) => r.label)).toEqual(['00:00', '01:00', '02:00']);
    expect(rows[0]?.failurePct).toEqual({ CONFLICT: 0, TRANSIENT: 0 });
    expect(rows[1]?.failurePct).toEqual({ CONFLICT: 2, TRANSIENT: 10 });
    expect(rows[2]?.failurePct).toEqual({ CONFLICT: null, TRANSIENT: null });
    expect(rows[1]?.downstreamPct).toBeCloseTo(20);
    expect(rows[2]).toMatchObject({ p50: null, p95: null, itemsPerSecond: null, downstreamPct: null, ended: 0 });
    expect(rows[1]?.runs).toMatchObject({ SUCCEEDED: 1, FAILED: 1, CANCELLED: 0 });
    const t = historyTotals(day);
    expect(t).toMatchObject({ ended: 5, processed: 300, activeSeconds: 300, failed: 12, calls: 150, downstreamErrors: 15 });
    expect(t.failures).toEqual({ CONFLICT: 2, TRANSIENT: 10 });
  });
});

describe('durationTick', () => {
  it('keeps neighbouring duration ticks apart', () => {
    expect([0.55, 1.1, 1.65, 2.2, 42.4, 185].map(durationTick)).toEqual(['550ms', '1.1s', '1.7s', '2.2s', '42s', '3m 05s']);
  });
});

describe('JobHistory', () => {
  it('draws every series of the window, and the window switch asks for another window', () => {
    const asked: Record<string, unknown>[] = [];
    renderWith(
      <Provider value={historyClient(asked)}>
        <JobHistory jobName="demo" timeZone="UTC" />
      </Provider>,
    );
    expect(asked.at(-1)).toEqual({ name: 'demo', window: 'LAST_24_HOURS' });
    expect(screen.getByTestId('history-range').textContent).toContain('3 hourly buckets');

    expect(screen.getByTestId('history-runs-totals').textContent).toBe('5 runs ended, 4 succeeded, 1 failed');
    expect(screen.getByTestId('history-duration-totals').textContent).toBe('5 runs measured');
    expect(screen.getByTestId('history-throughput-totals').textContent).toBe('300 items in 5m 00s active = 1.00 items/s');
    expect(screen.getByTestId('history-failures-totals').textContent).toBe('12 failed items of 300, 2 conflict, 10 transient');
    expect(screen.getByTestId('history-downstream-totals').textContent).toBe('15 of 150 calls failed downstream (10.0%)');

    // The charts are drawn: an SVG with the axis labels of the buckets, and a bar per non-empty
    // value (runs: 3 stacked segments; failures: 2 classes in one bucket; throughput: 2 buckets).
    for (const id of ['history-runs', 'history-duration', 'history-throughput', 'history-failures', 'history-downstream']) {
      const card = screen.getByTestId(id);
      expect(card.querySelector('svg.recharts-surface'), id).not.toBeNull();
      const ticks = Array.from(card.querySelectorAll('.recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value')).map((e) => e.textContent);
      expect(ticks, id).toContain('00:00');
    }
    const bars = (id: string) => screen.getByTestId(id).querySelectorAll('.recharts-bar-rectangle path.recharts-rectangle').length;
    expect(bars('history-runs')).toBe(3);
    expect(bars('history-failures')).toBe(2);
    expect(bars('history-throughput')).toBe(2);
    expect(within(screen.getByTestId('history-failures')).getByText('Conflict')).toBeInTheDocument();

    act(() => {
      fireEvent.click(screen.getByText('7 d'));
    });
    expect(asked.at(-1)).toEqual({ name: 'demo', window: 'LAST_7_DAYS' });
    expect(screen.getByTestId('history-range').textContent).toContain('2 6-hourly buckets');
    expect(screen.getByTestId('history-runs-totals').textContent).toBe('4 runs ended, 4 cancelled');
    expect(screen.getByTestId('history-duration-totals').textContent).toBe('4 runs measured');
    expect(screen.getByTestId('history-failures-totals').textContent).toBe('no failed items');
    expect(bars('history-runs')).toBe(1);
  }, 30_000); // five charts drawn twice in jsdom: seconds on a busy machine

  it('reads the history again when a run of the job starts or ends (refreshKey)', () => {
    const asked: Record<string, unknown>[] = [];
    function Harness() {
      const [key, setKey] = useState(0);
      return (
        <>
          <button onClick={() => setKey((k) => k + 1)}>a run ended</button>
          <JobHistory jobName="demo" timeZone="UTC" refreshKey={key} />
        </>
      );
    }
    renderWith(
      <Provider value={historyClient(asked)}>
        <Harness />
      </Provider>,
    );
    const before = asked.length;
    act(() => {
      fireEvent.click(screen.getByText('a run ended'));
    });
    expect(asked.length).toBeGreaterThan(before);
    expect(asked.at(-1)).toEqual({ name: 'demo', window: 'LAST_24_HOURS' });
  }, 30_000);
});
