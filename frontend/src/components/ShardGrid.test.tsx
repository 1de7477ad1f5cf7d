import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';

import type { RunShardFieldsFragment, ShardStatus } from '../gql/graphql';
import { renderWith } from '../test/render';
import { leaseAgeMs, ShardGrid, shardSummary } from './ShardGrid';

function shard(key: string, status: ShardStatus, over: Partial<RunShardFieldsFragment> = {}): RunShardFieldsFragment {
  const held = status === 'RUNNING' || status === 'STARTING';
  return {
    key,
    index: Number(key),
    spec: `pages ${key}00-${key}99`,
    status,
    instance: held ? 'node-a' : null,
    processed: 40,
    succeeded: 40,
    failed: 0,
    skipped: 0,
    ambiguous: 0,
    total: 100,
    percent: 40,
    checkpoint: `p${key}40`,
    leaseAgeSeconds: held ? 2 : null,
    heartbeatAt: '2026-05-01T00:00:10Z',
    attempt: 0,
    resumeAt: null,
    message: '',
    ...over,
  };
}

describe('ShardGrid', () => {
  it('shows every shard with its status in words, holder, progress, checkpoint and lease age', () => {
    const shards = [
      shard('0', 'RUNNING'),
      shard('1', 'PENDING', { processed: 0, succeeded: 0, percent: 0, checkpoint: '' }),
      shard('2', 'SUCCEEDED', { processed: 100, succeeded: 100, percent: 100, checkpoint: 'p299' }),
      shard('3', 'PENDING', { attempt: 1 }),
    ];
    renderWith(<ShardGrid shards={shards} receivedAt={1_000} now={4_000} />);
    expect(screen.getByTestId('shard-summary').textContent).toBe('4 shards · 1 running · 2 pending · 1 done');
    const cells = screen.getAllByTestId('shard-cell');
    const cell = (i: number): HTMLElement => {
      const c = cells[i];
      if (!c) throw new Error(`no cell ${i}`);
      return c;
    };
    expect(cells.map((c) => c.getAttribute('data-shard-status'))).toEqual(['RUNNING', 'PENDING', 'SUCCEEDED', 'PENDING']);

    const running = within(cell(0));
    expect(running.getByTestId('shard-status').textContent).toBe('Running');
    expect(running.getByTestId('shard-holder').textContent).toBe('on node-a');
    expect(running.getByTestId('shard-progress').textContent).toBe('40 / 100');
    expect(running.getByTestId('shard-checkpoint').textContent).toBe('checkpoint p040');
    // 2 s old when it arrived, 3 s since.
    expect(running.getByTestId('shard-lease-age').textContent).toBe('lease renewed 5s ago');

    const waiting = within(cell(1));
    expect(waiting.getByTestId('shard-status').textContent).toBe('Pending');
    expect(waiting.getByTestId('shard-holder').textContent).toBe('no holder');
    expect(waiting.getByTestId('shard-checkpoint').textContent).toBe('checkpoint —');
    expect(waiting.getByTestId('shard-lease-age').textContent).toBe('lease: —');

    expect(within(cell(2)).getByTestId('shard-status').textContent).toBe('Done');
    expect(within(cell(3)).getByTestId('shard-holder').textContent).toBe('handed back (attempt 2)');
  });

  it('shows nothing for a run without shards', () => {
    renderWith(<ShardGrid shards={[]} receivedAt={0} now={0} />);
    expect(screen.queryByTestId('shard-grid')).toBeNull();
  });
});

describe('shardSummary', () => {
  it('names the ends that are not done', () => {
    expect(shardSummary([{ status: 'FAILED' }, { status: 'CANCELLED' }, { status: 'STARTING' }])).toBe(
      '3 shards · 1 running · 0 pending · 0 done · 1 failed · 1 stopped',
    );
  });
});

describe('leaseAgeMs', () => {
  it('counts on from the age the server gave, and is null without a holder', () => {
    expect(leaseAgeMs({ leaseAgeSeconds: 1.5 }, 10_000, 12_000)).toBe(3_500);
    expect(leaseAgeMs({ leaseAgeSeconds: null }, 10_000, 12_000)).toBeNull();
  });
});
