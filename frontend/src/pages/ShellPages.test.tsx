import '@testing-library/jest-dom/vitest';
import { MantineProvider } from '@mantine/core';
import type { OperationResult } from '@urql/core';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import type { ReactElement } from 'react';
import { MemoryRouter } from 'react-router';
import { Client, Provider } from 'urql';
import { describe, expect, it } from 'vitest';
import { fromValue, never } from 'wonka';

import { ViewerProvider, type Viewer } from '../auth/AuthContext';
import { theme } from '../theme';
import { AlertsPage } from './AlertsPage';
import { AuditPage } from './AuditPage';

type Op = Parameters<Client['executeQuery']>[0];

/** mockClient answers every query with data(op) and records the operations. */
function mockClient(data: (op: Op) => unknown) {
  const ops: Op[] = [];
  const mutations: Op[] = [];
  const client = {
    executeQuery: (op: Op) => {
      ops.push(op);
      return fromValue({ operation: op, data: data(op), stale: false, hasNext: false } as OperationResult);
    },
    executeMutation: (op: Op) => {
      mutations.push(op);
      return never;
    },
    executeSubscription: () => never,
  } as unknown as Client;
  return { client, ops, mutations };
}

function renderAt(ui: ReactElement, url: string, client: Client, viewer: Viewer = { name: 'op', role: 'OPERATOR' }) {
  return render(
    <MantineProvider theme={theme}>
      <MemoryRouter initialEntries={[url]}>
        <Provider value={client}>
          <ViewerProvider viewer={viewer}>{ui}</ViewerProvider>
        </Provider>
      </MemoryRouter>
    </MantineProvider>,
  );
}

const entry = {
  __typename: 'AuditEntry',
  id: 'QXVkaXRFbnRyeTox',
  actor: 'e2e-viewer',
  action: 'requestRestart',
  target: 'run:42',
  arguments: { _truncated: true, _originalBytes: 50038, name: 'payouts', reason: 'why why … (50000 bytes)', token: '[REDACTED]' },
  truncated: true,
  outcome: 'FORBIDDEN',
  createdAt: '2026-05-01T04:00:00Z',
};

describe('AuditPage', () => {
  it('sends the URL’s filters, links the target and opens a row to its stored arguments', async () => {
    const { client, ops } = mockClient(() => ({ auditLog: { __typename: 'AuditEntryConnection', nodes: [entry], pageInfo: { __typename: 'PageInfo', hasNextPage: false, endCursor: null } } }));
    renderAt(<AuditPage />, '/admin/audit?actor=e2e-viewer&outcome=FORBIDDEN', client);
    const row = await screen.findByTestId('audit-row');
    expect(ops[0]?.variables).toMatchObject({ filter: { actor: 'e2e-viewer', outcome: 'FORBIDDEN' }, first: 50 });
    expect(screen.getByTestId('audit-filter-actor')).toHaveValue('e2e-viewer');
    expect(within(row).getByTestId('audit-truncated')).toHaveTextContent('truncated');
    expect(within(row).getByTestId('audit-target-link')).toHaveAttribute('href', `/admin/runs/${encodeURIComponent(btoa('Run:42'))}`);
    expect(screen.queryByTestId('audit-args')).toBeNull();
    await userEvent.click(within(row).getByRole('button', { name: 'Show arguments' }));
    const args = screen.getByTestId('audit-args');
    expect(args).toHaveTextContent('"_truncated": true');
    expect(args).toHaveTextContent('"token": "[REDACTED]"');
    expect(screen.getByText(/the request held 50038 bytes/)).toBeInTheDocument();
  });
  it('is for operators', () => {
    const { client, ops } = mockClient(() => null);
    renderAt(<AuditPage />, '/admin/audit', client, { name: 'v', role: 'VIEWER' });
    expect(screen.getByText('The audit log is for operators')).toBeInTheDocument();
    expect(ops).toHaveLength(0);
  });
});

const alert = (over: Record<string, unknown>) => ({
  __typename: 'Alert',
  id: 'TARGET_RETRIED:job:payouts',
  episodeId: 'QWxlcnRFcGlzb2RlOjE=',
  kind: 'TARGET_RETRIED',
  severity: 'WARNING',
  jobName: 'payouts',
  target: null,
  message: '1 target(s) of payouts were attempted 3 or more times',
  value: 1,
  since: '2026-05-01T04:00:00Z',
  firedAt: '2026-05-01T04:00:00Z',
  resolvedAt: null,
  active: true,
  acknowledgedBy: null,
  acknowledgedAt: null,
  silencedUntil: null,
  silencedBy: null,
  job: { __typename: 'Job', id: 'Sm9iOnBheW91dHM=', timezone: 'America/New_York' },
  run: { __typename: 'Run', id: 'UnVuOjc=' },
  ...over,
});

describe('AlertsPage', () => {
  const alerts = [
    alert({}),
    alert({ id: 'AMBIGUOUS_EFFECT:job:payouts', kind: 'AMBIGUOUS_EFFECT', severity: 'CRITICAL', silencedUntil: '2026-05-01T05:00:00Z', silencedBy: 'bob' }),
    alert({ id: 'DOWNSTREAM_ERRORS:job:payouts', kind: 'DOWNSTREAM_ERRORS', acknowledgedBy: 'alice', acknowledgedAt: '2026-05-01T04:01:00Z' }),
  ];
  it('hides silenced alarms until asked, says who acknowledged, and acknowledges by id', async () => {
    const { client, mutations } = mockClient(() => ({ alerts }));
    renderAt(<AlertsPage />, '/admin/alerts', client);
    const cards = await screen.findAllByTestId('alert-card');
    expect(cards.map((c) => c.getAttribute('data-alert-id'))).toEqual(['TARGET_RETRIED:job:payouts', 'DOWNSTREAM_ERRORS:job:payouts']);
    expect(within(cards[1] as HTMLElement).getByTestId('alert-acked')).toHaveTextContent('Acknowledged by alice');
    expect(within(cards[0] as HTMLElement).getByTestId('alert-run-link')).toHaveAttribute('href', `/admin/runs/${encodeURIComponent('UnVuOjc=')}`);
    await userEvent.click(within(cards[0] as HTMLElement).getByRole('button', { name: 'Acknowledge' }));
    expect(mutations).toHaveLength(1);
    expect(mutations[0]?.variables).toEqual({ input: { id: 'TARGET_RETRIED:job:payouts' } });

    await userEvent.click(screen.getByTestId('show-silenced'));
    const silenced = screen.getAllByTestId('alert-card').find((c) => c.getAttribute('data-alert-id') === 'AMBIGUOUS_EFFECT:job:payouts');
    expect(silenced).toBeDefined();
    expect(within(silenced as HTMLElement).getByTestId('alert-silenced')).toHaveTextContent('Silenced by bob until');
  });
  it('gives a viewer disabled actions that say why', async () => {
    const { client } = mockClient(() => ({ alerts }));
    renderAt(<AlertsPage />, '/admin/alerts', client, { name: 'v', role: 'VIEWER' });
    const [first] = await screen.findAllByTestId('alert-card');
    const ack = within(first as HTMLElement).getByRole('button', { name: 'Acknowledge' });
    expect(ack).toBeDisabled();
    expect(ack).toHaveAccessibleDescription('Needs the operator role; you are a viewer.');
  });
});
