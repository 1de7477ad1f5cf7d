import { act, fireEvent, screen } from '@testing-library/react';
import type { OperationResult } from '@urql/core';
import { Client, Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { fromValue, never } from 'wonka';

import { downstream, limits } from '../test/downstreams';
import { renderWith } from '../test/render';
import { DownstreamCard } from './DownstreamCard';
import { DownstreamEditor } from './DownstreamEditor';

/** clientAnswering is a urql client whose every mutation answers data, recording the variables. */
function clientAnswering(data: unknown) {
  const sent: unknown[] = [];
  const client = {
    executeQuery: () => never,
    executeSubscription: () => never,
    executeMutation: (op: { variables: unknown }) => {
      sent.push(op.variables);
      return fromValue({ operation: op, data, stale: false, hasNext: false } as unknown as OperationResult);
    },
  } as unknown as Client;
  return { client, sent };
}

const refused = (field: string, message: string) => ({
  updateDownstream: {
    __typename: 'UpdateDownstreamPayload',
    downstream: null,
    userErrors: [{ __typename: 'UserError', code: 'INVALID_INPUT', message, field }],
  },
});

async function click(testid: string) {
  await act(async () => {
    fireEvent.click(screen.getByTestId(testid));
    await Promise.resolve();
  });
}

describe('DownstreamEditor', () => {
  it('shows the defaults beside the values, and the server refusal by the field it names, and saves nothing', async () => {
    const { client, sent } = clientAnswering(refused('ratePerSecond', 'rate must be above 0 and at most 100000, not -5'));
    const onSaved = vi.fn();
    renderWith(
      <Provider value={client}>
        <DownstreamEditor downstream={downstream({ defaults: { ...limits, ratePerSecond: 40, burst: 8 } })} onSaved={onSaved} />
      </Provider>,
    );
    expect(screen.getByText('now 50/s, burst 10 · default 40/s, burst 8')).toBeInTheDocument();
    expect(screen.getByTestId('ds-save')).toBeDisabled();
    fireEvent.change(screen.getByTestId('ds-ratePerSecond'), { target: { value: '-5' } });
    fireEvent.change(screen.getByTestId('ds-reason'), { target: { value: 'provider asked' } });
    await click('ds-save');
    expect(sent).toEqual([{ input: { name: 'provider', ratePerSecond: -5, reason: 'provider asked' } }]);
    expect(screen.getByTestId('ds-ratePerSecond-error')).toHaveTextContent(/INVALID_INPUT.*not -5/);
    expect(onSaved).not.toHaveBeenCalled();
  });

  it('pauses, and removes a limit, with the reason', async () => {
    const saved = { updateDownstream: { __typename: 'UpdateDownstreamPayload', downstream: downstream(), userErrors: [] } };
    const { client, sent } = clientAnswering(saved);
    const onSaved = vi.fn();
    renderWith(
      <Provider value={client}>
        <DownstreamEditor downstream={downstream()} onSaved={onSaved} />
      </Provider>,
    );
    expect(screen.getByTestId('ds-clear-QUOTA')).toBeDisabled(); // no quota to remove
    fireEvent.change(screen.getByTestId('ds-reason'), { target: { value: 'incident 42' } });
    await click('ds-pause');
    await click('ds-clear-CONCURRENCY');
    expect(sent).toEqual([
      { input: { name: 'provider', paused: true, reason: 'incident 42' } },
      { input: { name: 'provider', clear: ['CONCURRENCY'] } },
    ]);
    expect(onSaved).toHaveBeenCalledTimes(2);
  });

  it('offers resume for a paused downstream, and is disabled with the reason for a viewer', () => {
    const { client } = clientAnswering({});
    renderWith(
      <Provider value={client}>
        <DownstreamEditor downstream={downstream({ limits: { ...limits, paused: true } })} />
      </Provider>,
      { name: 'v', role: 'VIEWER' },
    );
    expect(screen.getByTestId('ds-resume')).toBeDisabled();
    expect(screen.queryByTestId('ds-pause')).toBeNull();
    expect(screen.getAllByLabelText('Needs the operator role; you are a viewer.').length).toBeGreaterThan(0);
  });
});

describe('DownstreamCard', () => {
  it('says a spent quota holds the calls', () => {
    const { client } = clientAnswering({});
    renderWith(
      <Provider value={client}>
        <DownstreamCard downstream={downstream({ limits: { ...limits, quota: 100, quotaWindow: 'HOUR' } }, { quotaUsed: 100 })} history={[]} />
      </Provider>,
    );
    expect(screen.getByTestId('ds-quota-spent')).toHaveTextContent('quota spent');
    expect(screen.getByTestId('ds-quota')).toHaveTextContent('100 of 100spent: calls wait for the next window');
  });

  it('shows the live figures, pushback, blocking, DEGRADED and PAUSED', () => {
    const { client } = clientAnswering({});
    const until = new Date(Date.now() + 60_000).toISOString();
    renderWith(
      <Provider value={client}>
        <DownstreamCard
          downstream={downstream(
            {
              limits: { ...limits, paused: true, quota: 1000, quotaWindow: 'DAY' },
              updatedBy: 'ops-1',
              updatedAt: new Date().toISOString(),
              version: 3,
            },
            { effectiveRate: 31.5, degraded: true, waits: 20, waitSeconds: 1.2, throttled: 7, quotaUsed: 120, blockedUntil: until },
          )}
          history={[10, 20, 42.37]}
        />
      </Provider>,
    );
    expect(screen.getByTestId('ds-calls-per-second')).toHaveTextContent('42.4/s');
    expect(screen.getByTestId('sparkline')).toHaveAttribute('data-points', '3');
    expect(screen.getByTestId('ds-effective')).toHaveTextContent('31.5/s of 50/s');
    expect(screen.getByTestId('ds-pushback')).toHaveTextContent('slowed by pushback');
    expect(screen.getByTestId('ds-in-flight')).toHaveTextContent('3 of 16');
    expect(screen.getByTestId('ds-waits')).toHaveTextContent('20 waited, 1.2 s in all, 60 ms on average');
    expect(screen.getByTestId('ds-throttled')).toHaveTextContent('7');
    expect(screen.getByTestId('ds-quota')).toHaveTextContent('120 of 1,000');
    expect(screen.queryByTestId('ds-quota-spent')).toBeNull();
    expect(screen.getByTestId('ds-blocked')).toHaveTextContent('Retry-After');
    expect(screen.getByTestId('ds-degraded')).toHaveTextContent('DEGRADED');
    expect(screen.getByTestId('ds-degraded-alert')).toHaveTextContent('Redis unreachable: instances limit on their local share');
    expect(screen.getByTestId('ds-paused')).toHaveTextContent('PAUSED');
    expect(screen.getByTestId('ds-changed')).toHaveTextContent(/changed by ops-1.*version 3/);
    expect(screen.queryByTestId('downstream-editor')).toBeNull();
    fireEvent.click(screen.getByTestId('ds-edit'));
    expect(screen.getByTestId('downstream-editor')).toBeInTheDocument();
  });

  it('says nothing of pushback, blocking or degradation when there is none', () => {
    const { client } = clientAnswering({});
    renderWith(
      <Provider value={client}>
        <DownstreamCard downstream={downstream()} history={[]} />
      </Provider>,
    );
    expect(screen.queryByTestId('ds-pushback')).toBeNull();
    expect(screen.queryByTestId('ds-degraded')).toBeNull();
    expect(screen.queryByTestId('ds-paused')).toBeNull();
    expect(screen.getByTestId('ds-blocked')).toHaveTextContent('not blocked');
    expect(screen.queryByTestId('ds-quota-spent')).toBeNull();
    expect(screen.getByTestId('ds-changed')).toHaveTextContent("The code's defaults hold");
    expect(screen.getByTestId('ds-defaults')).toHaveTextContent('Defaults in code: rate 50/s, burst 10 · concurrency 16 in flight · no quota');
  });
});
