import { act, fireEvent, screen } from '@testing-library/react';
import { Client, Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { fromValue, never } from 'wonka';
import type { OperationResult } from '@urql/core';

import { renderWith } from '../test/render';
import { AutoResumeChain } from './AutoResumeChain';
import { AutoResumeEditor } from './AutoResumeEditor';

const policy = { enabled: true, maxAttempts: 3, backoffSeconds: 5, on: ['LEASE_EXPIRED', 'SHUTDOWN', 'DATABASE'] as const };

/** clientAnswering is a urql client whose every mutation answers data. */
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

describe('AutoResumeEditor', () => {
  it('shows the server refusal next to the field it names, and saves nothing', async () => {
    const { client, sent } = clientAnswering({
      updateJobAutoResume: {
        __typename: 'UpdateJobAutoResumePayload',
        job: null,
        userErrors: [{ __typename: 'UserError', code: 'INVALID_INPUT', message: 'auto-resume max attempts must be 1 to 100, not 0', field: 'maxAttempts' }],
      },
    });
    const onSaved = vi.fn();
    renderWith(
      <Provider value={client}>
        <AutoResumeEditor name="demo" policy={policy} onSaved={onSaved} />
      </Provider>,
    );
    expect(screen.getByTestId('auto-resume-save')).toBeDisabled();
    fireEvent.change(screen.getByTestId('auto-resume-max-attempts'), { target: { value: '0' } });
    // Enabled, the button is rendered anew (without the wrapper that carries a reason).
    expect(screen.getByTestId('auto-resume-save')).toBeEnabled();
    await act(async () => {
      fireEvent.click(screen.getByTestId('auto-resume-save'));
      await Promise.resolve();
    });
    expect(sent).toEqual([{ input: { name: 'demo', maxAttempts: 0 } }]);
    expect(screen.getByTestId('auto-resume-max-attempts-error')).toHaveTextContent(/INVALID_INPUT.*not 0/);
    expect(onSaved).not.toHaveBeenCalled();
  });
  it('is disabled with the reason for a viewer', () => {
    const { client } = clientAnswering({});
    renderWith(
      <Provider value={client}>
        <AutoResumeEditor name="demo" policy={policy} onSaved={() => undefined} />
      </Provider>,
      { name: 'v', role: 'VIEWER' },
    );
    fireEvent.click(screen.getByTestId('auto-resume-cause-SHUTDOWN'));
    expect(screen.getByTestId('auto-resume-save')).toBeDisabled();
    expect(screen.getByLabelText('Needs the operator role; you are a viewer.')).toBeInTheDocument();
  });
});

describe('AutoResumeChain', () => {
  it('links the run it continues and the run that continued it', () => {
    const ar = {
      outcome: 'RESUMED' as const,
      dueAt: null,
      maxAttempts: 3,
      resumedBy: btoa('Run:44'),
    };
    renderWith(<AutoResumeChain run={{ attempt: 2, resumedFrom: btoa('Run:41'), autoResume: ar, maxAttempts: 3 }} now={Date.now()} />);
    expect(screen.getByTestId('auto-resume-attempt')).toHaveTextContent('auto-resume 2 of 3 · resumed from #41');
    expect(screen.getByTestId('auto-resume-resumed')).toHaveTextContent('resumed by #44');
    expect(screen.getByRole('link', { name: '#44' })).toHaveAttribute('href', `/admin/runs/${encodeURIComponent(btoa('Run:44'))}`);
  });
});
