import { screen, waitFor } from '@testing-library/react';
import type { OperationResult } from '@urql/core';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fromValue } from 'wonka';

import { downstream } from '../test/downstreams';
import { renderWith } from '../test/render';
import { DownstreamsPage } from './DownstreamsPage';

/** pollingClient answers every downstreams query with the next figures, and counts the queries. */
function pollingClient(answer: (n: number) => unknown) {
  const asked: string[] = [];
  const client = {
    executeQuery: (request: unknown, opts?: { requestPolicy?: string }) => {
      asked.push(opts?.requestPolicy ?? 'none');
      return fromValue({ operation: request, data: answer(asked.length), stale: false, hasNext: false } as unknown as OperationResult);
    },
    executeMutation: () => fromValue({}),
    executeSubscription: () => fromValue({}),
  } as unknown as Client;
  return { client, asked };
}

describe('DownstreamsPage', () => {
  it('reads the figures again and again from the network, and draws calls/s as they come', async () => {
    const { client, asked } = pollingClient((n) => ({
      downstreams: [downstream({}, { callsPerSecond: n * 10 }), downstream({ name: 'source-site' }, { callsPerSecond: 1 })],
    }));
    renderWith(
      <Provider value={client}>
        <DownstreamsPage pollMs={20} />
      </Provider>,
    );
    await waitFor(() => expect(Number(screen.getAllByTestId('sparkline')[0]?.getAttribute('data-points'))).toBeGreaterThanOrEqual(4), {
      timeout: 5000,
    });
    expect(asked.length).toBeGreaterThanOrEqual(4);
    expect(asked.every((p) => p === 'network-only')).toBe(true);
    const cards = screen.getAllByTestId('downstream-card');
    expect(cards.map((c) => c.getAttribute('data-name'))).toEqual(['provider', 'source-site']);
    expect(screen.getByTestId('ds-as-of')).toHaveTextContent(/^as of \d\d:\d\d:\d\d · every second$/);
  });

  it('says when there is no downstream', async () => {
    const { client } = pollingClient(() => ({ downstreams: [] }));
    renderWith(
      <Provider value={client}>
        <DownstreamsPage pollMs={60_000} />
      </Provider>,
    );
    expect(await screen.findByText('No downstreams')).toBeInTheDocument();
  });
});
