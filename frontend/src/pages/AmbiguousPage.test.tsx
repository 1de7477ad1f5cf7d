import { act, screen } from '@testing-library/react';
import { Client, Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { makeSubject, never } from 'wonka';
import type { OperationResult } from '@urql/core';

import { renderWith } from '../test/render';
import { ReconcileProgress } from './AmbiguousPage';

function request(status: string, resultState: string | null, message = '') {
  return {
    reconcileRequest: {
      __typename: 'ReconcileRequest',
      id: 'UmVjb25jaWxlUmVxdWVzdDox',
      status,
      resultState,
      message,
      attempt: 1,
      entry: { __typename: 'LedgerEntry', id: 'TGVkZ2VyRW50cnk6MQ==', targetKey: 'acct:1', state: resultState ?? 'AMBIGUOUS_EFFECT' },
    },
  };
}

describe('ReconcileProgress', () => {
  it('shows reconciling… and then the outcome as the subscription delivers it', () => {
    const events = makeSubject<OperationResult>();
    let operation: Parameters<Client['executeSubscription']>[0] | undefined;
    const client = {
      executeQuery: () => never,
      executeMutation: () => never,
      executeSubscription: (op: Parameters<Client['executeSubscription']>[0]) => {
        operation = op;
        return events.source;
      },
    } as unknown as Client;
    const onEnd = vi.fn();
    renderWith(
      <Provider value={client}>
        <ReconcileProgress requestId="UmVjb25jaWxlUmVxdWVzdDox" targetKey="acct:1" onEnd={onEnd} />
      </Provider>,
    );
    expect(screen.getByTestId('reconcile-status').textContent).toBe('reconciling…');
    expect(operation?.variables).toEqual({ id: 'UmVjb25jaWxlUmVxdWVzdDox' });
    const emit = (data: ReturnType<typeof request>) => {
      if (!operation) throw new Error('not subscribed');
      act(() => events.next({ operation, data, stale: false, hasNext: true } as OperationResult));
    };
    emit(request('RUNNING', null));
    expect(screen.getByTestId('reconcile-status').textContent).toBe('reconciling…');
    expect(onEnd).not.toHaveBeenCalled();
    emit(request('DONE', 'CONFIRMED', 'reconciled: the outside system confirmed the effect'));
    expect(screen.getByTestId('reconcile-status').textContent).toBe('reconciled as CONFIRMED');
    expect(onEnd).toHaveBeenCalledTimes(1);
  });
});
