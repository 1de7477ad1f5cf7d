import { describe, expect, it } from 'vitest';

import type { RunSummary } from '../api/runs';
import type { RunLiveFieldsFragment, RunStatus } from '../gql/graphql';
import { currentRate, foldRun } from './runProgress';
import { currentRuns, reduceRunEvents } from './runEvents';

function summary(id: string, status: RunStatus, startedAt: string, processed = 0): RunSummary {
  return {
    
    id,
    number: Number(id.replace(/\D/g, '')) || 1,
    jobName: 'demo-collect',
    status,
    trigger: 'MANUAL',
    mode: 'RESUME',
    attempt: 0,
    requestedBy: 'alice',
    instance: 'i1',
    generation: 1,
    cancelRequested: false,
    needsAttention: false,
    attention: { failed: 0, rejected: 0, ambiguous: 0 },
    pauseRequested: false,
    stopReason: null,
    startedAt,
    finishedAt: null,
    message: '',
    progress: { total: 600, processed, succeeded: processed, failed: 0, skipped: 0, ambiguous: 0, percent: (processed / 600) * 100 },
  };
}

function live(processed: number, status: RunStatus = 'RUNNING'): RunLiveFieldsFragment {
  return {
    ...summary('r1', status, '2026-05-01T00:00:00Z', processed),
    checkpoint: `p${processed}`,
    startCheckpoint: '',
    leaseUntil: '2026-05-01T00:00:30Z',
    heartbeatAt: '2026-05-01T00:00:10Z',
    activatedAt: '2026-05-01T00:00:00Z',
    cancelRequestedBy: null,
    shardTotal: null,
    shardKey: null,
    shardOf: null,
    shards: [],
  };
}

describe('runEvents reducer', () => {
  it('keeps the newest run per job and counts lifecycle events', () => {
    let s = reduceRunEvents(undefined, { runEvents: { kind: 'STARTED', run: summary('r1', 'STARTING', '2026-05-01T00:00:00Z') } });
    expect(s.lifecycle).toBe(1);
    s = reduceRunEvents(s, { runEvents: { kind: 'PROGRESS', run: summary('r1', 'RUNNING', '2026-05-01T00:00:00Z', 10) } });
    expect(s.lifecycle).toBe(1);
    expect(s.byJob['demo-collect']?.progress.processed).toBe(10);
    s = reduceRunEvents(s, { runEvents: { kind: 'FINISHED', run: summary('r1', 'CANCELLED', '2026-05-01T00:00:00Z', 12) } });
    expect(s.lifecycle).toBe(2);
    expect(s.byJob['demo-collect']?.status).toBe('CANCELLED');
  });
});

describe('currentRuns', () => {
  const old = summary('r0', 'SUCCEEDED', '2026-04-30T00:00:00Z', 600);
  it('uses the fetched runs without live data', () => {
    expect(currentRuns({ activeRun: null, lastRun: old }, undefined)).toEqual({ active: null, last: old });
  });
  it('shows a live active run', () => {
    const r = summary('r1', 'RUNNING', '2026-05-01T00:00:00Z', 5);
    expect(currentRuns({ activeRun: null, lastRun: old }, r)).toEqual({ active: r, last: r });
  });
  it('ends the active run when it finishes live', () => {
    const running = summary('r1', 'RUNNING', '2026-05-01T00:00:00Z', 5);
    const done = summary('r1', 'CANCELLED', '2026-05-01T00:00:00Z', 9);
    expect(currentRuns({ activeRun: running, lastRun: running }, done)).toEqual({ active: null, last: done });
  });
  it('ignores a live event of an older run', () => {
    const current = summary('r2', 'RUNNING', '2026-05-02T00:00:00Z', 5);
    const stale = summary('r1', 'FAILED', '2026-05-01T00:00:00Z', 9);
    expect(currentRuns({ activeRun: current, lastRun: current }, stale)).toEqual({ active: current, last: current });
  });
});

describe('runProgress reducer', () => {
  it('samples progress, builds one rate point a second, records status changes', () => {
    let s = foldRun(undefined, live(0), 0);
    expect(s.rates).toEqual([]);
    expect(s.changes.map((c) => c.status)).toEqual(['RUNNING']);
    s = foldRun(s, live(10), 1000);
    expect(s.rates).toEqual([10]);
    s = foldRun(s, live(12), 1200);
    expect(s.rates).toHaveLength(1); // same second: the point is replaced
    s = foldRun(s, live(30), 2000);
    expect(s.rates).toHaveLength(2);
    expect(s.rates[1]).toBe(15);
    s = foldRun(s, live(31, 'CANCELLED'), 2500);
    expect(s.changes.map((c) => c.status)).toEqual(['RUNNING', 'CANCELLED']);
    expect(s.updates).toBe(5);
  });
  it('falls back to the average since activation with one snapshot', () => {
    const s = foldRun(undefined, live(100), Date.parse('2026-05-01T00:00:10Z'));
    expect(currentRate(s, s.run, Date.parse('2026-05-01T00:00:10Z'))).toBe(10);
  });
});
