import { act, fireEvent, screen } from '@testing-library/react';
import type { OperationResult } from '@urql/core';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fromValue } from 'wonka';

import { renderWith } from '../test/render';
import { NotificationsPage } from './NotificationsPage';

const channel = {
  __typename: 'NotificationChannel',
  id: 'Tm90aWZpY2F0aW9uQ2hhbm5lbDox',
  name: 'ops',
  kind: 'WEBHOOK',
  url: 'https://hooks.example/baton',
  secretSet: true,
  secretHint: '…0042',
  ratePerMinute: 30,
  burst: 5,
  updatedAt: '2026-12-02T08:00:00Z',
  updatedBy: 'alice',
  routes: [{ __typename: 'NotificationRoute', id: 'r1', kinds: ['AMBIGUOUS_EFFECT'], jobs: ['pay-*'], minSeverity: 'CRITICAL' }],
};

/** client answers the page's query with one channel and records the mutations' variables. */
function client() {
  const sent: unknown[] = [];
  const c = {
    executeQuery: (request: unknown) =>
      fromValue({ operation: request, data: { notificationChannels: [channel], notificationDeliveries: [] }, stale: false, hasNext: false } as unknown as OperationResult),
    executeMutation: (op: { variables: unknown }) => {
      sent.push(op.variables);
      return fromValue({ operation: op, data: { saveNotificationChannel: { channel, userErrors: [] } }, stale: false, hasNext: false } as unknown as OperationResult);
    },
    executeSubscription: () => fromValue({}),
  } as unknown as Client;
  return { client: c, sent };
}

describe('NotificationsPage', () => {
  it('shows a channel with its secret hint and routes, and adds a route keeping the others', async () => {
    const { client: c, sent } = client();
    renderWith(
      <Provider value={c}>
        <NotificationsPage />
      </Provider>,
      { name: 'root', role: 'ADMIN' },
    );
    expect(await screen.findByTestId('channel-secret-hint')).toHaveTextContent('…0042');
    expect(screen.getByText('→ AMBIGUOUS_EFFECT of pay-* · CRITICAL only')).toBeInTheDocument();
    fireEvent.change(screen.getByTestId('route-jobs'), { target: { value: 'settle-*, ' } });
    await act(async () => {
      fireEvent.click(screen.getByTestId('route-add'));
      await Promise.resolve();
    });
    expect(sent).toEqual([
      {
        input: {
          id: channel.id,
          routes: [
            { kinds: ['AMBIGUOUS_EFFECT'], jobs: ['pay-*'], minSeverity: 'CRITICAL' },
            { kinds: [], jobs: ['settle-*'], minSeverity: 'WARNING' },
          ],
        },
      },
    ]);
  });

  it('offers a viewer no way to change channels', async () => {
    const { client: c } = client();
    renderWith(
      <Provider value={c}>
        <NotificationsPage />
      </Provider>,
      { name: 'v', role: 'VIEWER' },
    );
    await screen.findByTestId('channel-card');
    expect(screen.queryByTestId('add-channel')).toBeNull();
    expect(screen.queryByTestId('route-add')).toBeNull();
    expect(screen.queryByTestId('channel-delete')).toBeNull();
    expect(screen.queryByTestId('channel-test')).toBeNull();
  });
});
