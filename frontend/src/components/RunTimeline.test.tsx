import { act, screen } from '@testing-library/react';
import type { OperationResult } from '@urql/core';
import type { ReactElement } from 'react';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { makeSubject, never } from 'wonka';

import { renderWith } from '../test/render';
import { laneLabel, layoutTimeline, RunTimeline, type TimelineEventInput } from './RunTimeline';

const events: TimelineEventInput[] = [
  { at: '2026-03-01T10:00:00Z', kind: 'REQUESTED', detail: 'MANUAL RESUME run requested by alice', actor: '' },
  { at: '2026-03-01T10:00:01Z', kind: 'ACTIVATED', detail: 'running on node-1', actor: '' },
  { at: '2026-03-01T10:00:16Z', kind: 'LEASE_RENEWED', detail: 'lease until …', actor: '' },
  { at: '2026-03-01T10:00:31Z', kind: 'LEASE_RENEWED', detail: 'lease until …', actor: '' },
  { at: '2026-03-01T10:00:40Z', kind: 'PAUSE_REQUESTED', detail: 'job paused', actor: 'bob' },
  { at: '2026-03-01T10:00:45Z', kind: 'PAUSE_LIFTED', detail: 'job resumed', actor: 'bob' },
  { at: '2026-03-01T10:00:50Z', kind: 'CANCEL_REQUESTED', detail: '', actor: 'carol' },
  { at: '2026-03-01T10:01:40Z', kind: 'FINISHED', detail: 'CANCELLED (CANCELLED)', actor: '' },
];

describe('layoutTimeline', () => {
  it('spans the request to the end and places each event by its time', () => {
    const l = layoutTimeline(events, '2026-03-01T10:00:00Z', '2026-03-01T10:01:40Z', Date.parse('2026-03-01T11:00:00Z'));
    expect(l.end - l.start).toBe(100_000);
    expect(l.lanes).toHaveLength(1);
    expect(l.lanes[0]!.shard).toBeNull();
    expect(l.lanes[0]!.marks.map((m) => m.x)).toEqual([0, 0.01, 0.16, 0.31, 0.4, 0.45, 0.5, 1]);
    expect(l.active).toEqual([0.01, 1]);
  });

  it('ends at now while the run is active', () => {
    const l = layoutTimeline(events.slice(0, 3), '2026-03-01T10:00:00Z', null, Date.parse('2026-03-01T10:00:20Z'));
    expect(l.end - l.start).toBe(20_000);
    expect(l.active).toEqual([0.05, 1]);
  });

  it('gives every shard its own lane after the whole run', () => {
    const sharded: TimelineEventInput[] = [
      ...events,
      { at: '2026-03-01T10:00:20Z', kind: 'LEASE_RENEWED', detail: '', shard: 'b' },
      { at: '2026-03-01T10:00:21Z', kind: 'LEASE_RENEWED', detail: '', shard: 'a' },
    ];
    const l = layoutTimeline(sharded, '2026-03-01T10:00:00Z', '2026-03-01T10:01:40Z', 0);
    expect(l.lanes.map((x) => x.shard)).toEqual([null, 'a', 'b']);
    expect(l.lanes[1]!.marks).toHaveLength(1);
  });

  it('orders shard lanes by the numbers in their names', () => {
    const pages = ['pages 1001-1200', 'pages 201-400', 'pages 1-200'].map(
      (shard, i): TimelineEventInput => ({ at: `2026-03-01T10:00:2${i}Z`, kind: 'SHARD_CLAIMED', detail: '', shard }),
    );
    const l = layoutTimeline([...events, ...pages], '2026-03-01T10:00:00Z', '2026-03-01T10:01:40Z', 0);
    expect(l.lanes.map((x) => x.shard)).toEqual([null, 'pages 1-200', 'pages 201-400', 'pages 1001-1200']);
  });
});

describe('laneLabel', () => {
  it('keeps a name that fits and shortens one that does not', () => {
    expect(laneLabel('pages 1001-1200', 120)).toBe('pages 1001-1200');
    expect(laneLabel('pages 1001-1200', 64)).toBe('pages 1…');
    expect(laneLabel('run', 64)).toBe('run');
  });
});

const idle = { executeQuery: () => never, executeMutation: () => never, executeSubscription: () => never } as unknown as Client;
const withClient = (ui: ReactElement, client: Client = idle) => renderWith(<Provider value={client}>{ui}</Provider>);

describe('RunTimeline', () => {
  it('draws one mark per event on one lane and counts the renewals', () => {
    withClient(<RunTimeline events={events} startedAt="2026-03-01T10:00:00Z" finishedAt="2026-03-01T10:01:40Z" status="CANCELLED" />);
    const axis = screen.getByTestId('run-time-axis');
    expect(axis).toHaveAttribute('data-lanes', '1');
    expect(axis).toHaveAttribute('data-renewals', '2');
    const kinds = screen.getAllByTestId('run-timeline-mark').map((m) => m.getAttribute('data-kind'));
    expect(kinds).toEqual(events.map((e) => e.kind));
    expect(screen.getByText('Lease renewed ×2')).toBeInTheDocument();
    expect(screen.getByText('Cancel requested')).toBeInTheDocument();
    expect(screen.getByText('Ended cancelled')).toBeInTheDocument();
    expect(
      screen.getByRole('img', { name: /Requested, Activated, Pause requested, Pause lifted, Cancel requested, Finished; 2 lease renewals/ }),
    ).toBeInTheDocument();
  });

  it('shows the renewals recorded after the page opened, from its own read of the run', () => {
    const results = makeSubject<OperationResult>();
    let operation: Parameters<Client['executeQuery']>[0] | undefined;
    const client = {
      executeQuery: (op: Parameters<Client['executeQuery']>[0]) => {
        operation = op;
        return results.source;
      },
      executeMutation: () => never,
      executeSubscription: () => never,
    } as unknown as Client;
    const running = events.slice(0, 3);
    withClient(<RunTimeline runId="UnVuOjU=" events={running} startedAt="2026-03-01T10:00:00Z" finishedAt={null} status="RUNNING" />, client);
    expect(screen.getByTestId('run-time-axis')).toHaveAttribute('data-renewals', '1');
    expect(operation?.variables).toEqual({ id: 'UnVuOjU=' });
    const later = [...running, { at: '2026-03-01T10:00:31Z', kind: 'LEASE_RENEWED', detail: 'lease until …', actor: '', shard: null }];
    act(() =>
      results.next({
        operation: operation!,
        data: { run: { __typename: 'Run', id: 'UnVuOjU=', status: 'RUNNING', finishedAt: null, events: later } },
        stale: false,
        hasNext: false,
      } as OperationResult),
    );
    expect(screen.getByTestId('run-time-axis')).toHaveAttribute('data-renewals', '2');
  });
});
