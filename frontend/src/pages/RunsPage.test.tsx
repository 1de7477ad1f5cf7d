import { MantineProvider } from '@mantine/core';
import { fireEvent, render, screen } from '@testing-library/react';
import { MemoryRouter, useLocation } from 'react-router';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fromValue, never } from 'wonka';

import { ViewerProvider } from '../auth/AuthContext';
import { theme } from '../theme';
import { RunsView } from './RunsPage';

function Location() {
  const l = useLocation();
  return <output data-testid="location">{l.search}</output>;
}

/** renderAt renders the runs page at url and records the filters of the runs queries it makes. */
function renderAt(url: string) {
  const filters: unknown[] = [];
  const client = {
    executeQuery: (op: { variables: { filter: unknown } }) => {
      filters.push(op.variables.filter);
      return never;
    },
    executeMutation: () => never,
    executeSubscription: () => never,
  } as unknown as Client;
  render(
    <MantineProvider theme={theme}>
      <MemoryRouter initialEntries={[url]}>
        <ViewerProvider viewer={{ name: 'alice', role: 'OPERATOR' }}>
          <Provider value={client}>
            <RunsView reconnects={0} />
            <Location />
          </Provider>
        </ViewerProvider>
      </MemoryRouter>
    </MantineProvider>,
  );
  return filters;
}

describe('RunsPage and its URL', () => {
  it('asks for the runs the URL names and shows the filter in its controls', () => {
    const filters = renderAt('/admin/runs?job=payouts&status=FAILED&trigger=MANUAL&instance=node-2&number=42');
    expect(filters.at(-1)).toEqual({ jobName: 'payouts', statuses: ['FAILED'], triggers: ['MANUAL'], instance: 'node-2', number: 42 });
    expect(screen.getByTestId('runs-filter-job')).toHaveValue('payouts');
    expect(screen.getByTestId('runs-filter-number')).toHaveValue('42');
    expect(screen.getByTestId('runs-status-FAILED').querySelector('input')).toBeChecked();
    expect(screen.getByTestId('runs-status-RUNNING').querySelector('input')).not.toBeChecked();
  });

  it('writes a changed filter into the URL and queries with it', () => {
    const filters = renderAt('/admin/runs?job=payouts');
    fireEvent.click(screen.getByTestId('runs-status-PAUSED').querySelector('input')!);
    expect(screen.getByTestId('location').textContent).toBe('?job=payouts&status=PAUSED');
    expect(filters.at(-1)).toEqual({ jobName: 'payouts', statuses: ['PAUSED'] });
    const job = screen.getByTestId('runs-filter-job');
    fireEvent.change(job, { target: { value: 'mailer' } });
    fireEvent.keyDown(job, { key: 'Enter' });
    expect(screen.getByTestId('location').textContent).toBe('?job=mailer&status=PAUSED');
  });

  it('refuses a run number that is not one, and leaves the URL as it was', () => {
    renderAt('/admin/runs');
    const n = screen.getByTestId('runs-filter-number');
    fireEvent.change(n, { target: { value: 'abc' } });
    fireEvent.keyDown(n, { key: 'Enter' });
    expect(screen.getByText('A run number, such as 42 or #42')).toBeInTheDocument();
    expect(screen.getByTestId('location').textContent).toBe('');
    fireEvent.change(n, { target: { value: '#7' } });
    fireEvent.keyDown(n, { key: 'Enter' });
    expect(screen.getByTestId('location').textContent).toBe('?number=7');
  });

  it('names what it could not read of a hand-edited URL', () => {
    renderAt('/admin/runs?status=NOPE&window=2y');
    const problems = screen.getByTestId('runs-filter-problems');
    expect(problems).toHaveTextContent('Unknown status "NOPE" ignored.');
    expect(problems).toHaveTextContent('Unknown time window "2y" ignored.');
  });
});

describe('RunsPage rows', () => {
  it('shows a SUCCEEDED run with failed items as needing attention, not plain green', () => {
    const run = {
      __typename: 'Run', id: btoa('Run:9'), number: 9, jobName: 'payouts', status: 'SUCCEEDED', trigger: 'MANUAL', mode: 'RESTART',
      attempt: 0, requestedBy: 'alice', instance: 'node-1', generation: 2, cancelRequested: false, pauseRequested: false,
      stopReason: null, startedAt: '2026-12-01T10:00:00Z', finishedAt: '2026-12-01T10:00:03Z', message: '',
      needsAttention: true, attention: { failed: 1, rejected: 4, ambiguous: 0 },
      progress: { total: 20, processed: 20, succeeded: 15, failed: 5, skipped: 0, ambiguous: 0, percent: 100 },
    };
    const client = {
      executeQuery: (operation: unknown) =>
        fromValue({ operation, data: { runs: { nodes: [run], pageInfo: { hasNextPage: false, endCursor: null } } }, stale: false, hasNext: false }),
      executeMutation: () => never,
      executeSubscription: () => never,
    } as unknown as Client;
    render(
      <MantineProvider theme={theme}>
        <MemoryRouter initialEntries={['/admin/runs']}>
          <ViewerProvider viewer={{ name: 'alice', role: 'OPERATOR' }}>
            <Provider value={client}>
              <RunsView reconnects={0} />
            </Provider>
          </ViewerProvider>
        </MemoryRouter>
      </MantineProvider>,
    );
    expect(screen.getByTestId('runs-row-status')).toHaveAttribute('data-attention', 'true');
    expect(screen.getByTestId('runs-row-status')).toHaveTextContent(/needs attention/i);
    expect(screen.getByTestId('run-row-attention')).toHaveTextContent('1 failed · 4 rejected');
  });
});
