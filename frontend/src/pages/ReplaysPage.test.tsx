import { screen } from '@testing-library/react';
import { Client, Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { never } from 'wonka';

import type { ReplayRequestFieldsFragment } from '../gql/graphql';
import { renderWith } from '../test/render';
import { RequestCard } from './ReplaysPage';

function request(over: Partial<ReplayRequestFieldsFragment>): ReplayRequestFieldsFragment {
  return {
    __typename: 'ReplayRequest',
    id: 'UmVwbGF5UmVxdWVzdDox',
    kind: 'RESTART',
    generation: 1,
    scope: 'FULL',
    targetKeys: null,
    status: 'PENDING_APPROVAL',
    reason: 'new rates',
    compensationRef: null,
    requestedBy: 'alice',
    decidedBy: null,
    decisionNote: null,
    createdAt: '2026-01-01T12:00:00Z',
    decidedAt: null,
    executedAt: null,
    claimedUntil: null,
    reopenReason: null,
    job: { __typename: 'Job', id: 'Sm9iOmxlZGdlcg==', name: 'ledger-pay', riskLevel: 'HIGH' },
    sourceRun: { __typename: 'Run', id: 'UnVuOjE=', status: 'SUCCEEDED' },
    replayRun: null,
    preflight: { targetsInScope: 2, blocked: false, requiresApproval: true } as ReplayRequestFieldsFragment['preflight'],
    ...over,
  } as ReplayRequestFieldsFragment;
}

// jsdom has no document.fonts, which the note's autosizing textarea listens to.
if (!('fonts' in document)) {
  Object.defineProperty(document, 'fonts', { value: { addEventListener: () => undefined, removeEventListener: () => undefined } });
}

const client = { executeQuery: () => never, executeMutation: () => never, executeSubscription: () => never } as unknown as Client;

describe('RequestCard', () => {
  it('says why a request judged again needs approval again', () => {
    renderWith(
      <Provider value={client}>
        <RequestCard req={request({ reopenReason: 'judged again at execute: the job’s risk rose from LOW to HIGH' })} onDecided={vi.fn()} />
      </Provider>,
      { name: 'bob', role: 'APPROVER' },
    );
    expect(screen.getByTestId('replay-reopen-reason').textContent).toMatch(/Needs approval again:.*risk rose from LOW to HIGH/);
  });
  it('says nothing of reopening for a request never reopened', () => {
    renderWith(
      <Provider value={client}>
        <RequestCard req={request({})} onDecided={vi.fn()} />
      </Provider>,
      { name: 'bob', role: 'APPROVER' },
    );
    expect(screen.queryByTestId('replay-reopen-reason')).toBeNull();
  });
});
