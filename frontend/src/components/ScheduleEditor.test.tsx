import { act, fireEvent, screen } from '@testing-library/react';
import { Client, Provider } from 'urql';
import { describe, expect, it, vi } from 'vitest';
import { fromValue, never } from 'wonka';
import type { OperationResult } from '@urql/core';

import { renderWith } from '../test/render';
import { leaseInputError, ScheduleEditor } from './ScheduleEditor';

/** clientAnswering is a urql client whose every mutation answers data; queries never answer. */
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

const saved = {
  updateJobSchedule: {
    __typename: 'UpdateJobSchedulePayload',
    job: { __typename: 'Job', name: 'demo-flaky', cron: '', timezone: 'UTC', enabled: true, leaseSeconds: 600 },
    userErrors: [],
  },
};

function renderEditor(leaseSeconds: number | null = null) {
  const { client, sent } = clientAnswering(saved);
  const onSaved = vi.fn();
  renderWith(
    <Provider value={client}>
      <ScheduleEditor job={{ name: 'demo-flaky', cron: '', timezone: 'UTC', enabled: true, leaseSeconds }} onSaved={onSaved} />
    </Provider>,
  );
  return { sent, onSaved };
}

describe('ScheduleEditor lease override', () => {
  it.each(['99999999999', '-5', '0', '100000'])('refuses %s as typed, naming the range, and saves nothing', async (typed) => {
    const { sent, onSaved } = renderEditor();
    fireEvent.change(screen.getByTestId('lease-input'), { target: { value: typed } });
    // Not clamped: the box keeps what was typed, also after leaving it.
    fireEvent.blur(screen.getByTestId('lease-input'));
    expect(screen.getByTestId('lease-input')).toHaveValue(typed);
    expect(screen.getByTestId('lease-error')).toHaveTextContent(/INVALID_INPUT.*leaseSeconds must be a whole number between 1 and 86400/);
    expect(screen.getByTestId('schedule-save')).toBeDisabled();
    expect(screen.queryByLabelText('Nothing changed.')).not.toBeInTheDocument();
    expect(screen.getByLabelText(new RegExp(`Fix the lease override first: .*between 1 and 86400.*not ${typed}`))).toBeInTheDocument();
    await act(async () => {
      fireEvent.click(screen.getByTestId('schedule-save'));
      await Promise.resolve();
    });
    expect(sent).toEqual([]);
    expect(onSaved).not.toHaveBeenCalled();
  });

  it('saves a lease in range as typed', async () => {
    const { sent, onSaved } = renderEditor();
    fireEvent.change(screen.getByTestId('lease-input'), { target: { value: '600' } });
    expect(screen.queryByTestId('lease-error')).not.toBeInTheDocument();
    expect(screen.getByTestId('schedule-save')).toBeEnabled();
    await act(async () => {
      fireEvent.click(screen.getByTestId('schedule-save'));
      await Promise.resolve();
    });
    expect(sent).toEqual([{ input: { name: 'demo-flaky', leaseSeconds: 600 } }]);
    expect(onSaved).toHaveBeenCalled();
  });

  it('clears the override when the box is emptied', async () => {
    const { sent } = renderEditor(600);
    fireEvent.change(screen.getByTestId('lease-input'), { target: { value: '' } });
    await act(async () => {
      fireEvent.click(screen.getByTestId('schedule-save'));
      await Promise.resolve();
    });
    expect(sent).toEqual([{ input: { name: 'demo-flaky', leaseSeconds: 0 } }]);
  });

  it('leaseInputError takes 1 to 86400 whole seconds and empty', () => {
    for (const ok of ['', 1, 86400, '3600']) expect(leaseInputError(ok)).toBeNull();
    for (const bad of [0, -5, 86401, 99999999999, 1.5, 'abc']) expect(leaseInputError(bad)?.code).toBe('INVALID_INPUT');
  });
});

describe('ScheduleEditor on a HIGH-risk job', () => {
  it('says the change became a schedule request and changed nothing', async () => {
    const { client, sent } = clientAnswering({
      updateJobSchedule: {
        __typename: 'UpdateJobSchedulePayload',
        job: null,
        scheduleRequest: { __typename: 'ReplayRequest', id: btoa('ReplayRequest:12'), status: 'PENDING_APPROVAL' },
        userErrors: [{ __typename: 'UserError', code: 'APPROVAL_REQUIRED', message: 'demo-settlement is HIGH risk', field: 'cron' }],
      },
    });
    const onSaved = vi.fn();
    renderWith(
      <Provider value={client}>
        <ScheduleEditor job={{ name: 'demo-settlement', cron: '', timezone: 'UTC', enabled: true, leaseSeconds: null }} onSaved={onSaved} />
      </Provider>,
    );
    fireEvent.change(screen.getByTestId('lease-input'), { target: { value: '120' } });
    await act(async () => {
      fireEvent.click(screen.getByTestId('schedule-save'));
      await Promise.resolve();
    });
    expect(sent).toEqual([{ input: { name: 'demo-settlement', leaseSeconds: 120 } }]);
    expect(screen.getByTestId('schedule-requested')).toHaveTextContent(/schedule request #12 \(PENDING_APPROVAL\).*Replays/);
    expect(onSaved).not.toHaveBeenCalled();
  });
});
