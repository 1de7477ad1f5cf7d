import '@testing-library/jest-dom/vitest';
import { act, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { alertBadges } from '../api/alerts';
import { auditFilterInput, auditFiltersFrom, auditTargetLink } from '../api/audit';
import { createBatonClient, type SocketState } from '../api/client';
import { SIGNED_OUT_REASON, ViewerProvider } from '../auth/AuthContext';
import { renderWith } from '../test/render';
import { ActionButton } from './ActionButton';
import { DateTime, TimeAgo, zonedLines } from './Time';
import type { AlertKind } from '../gql/graphql';
import { alertKindLabel, alertTitle } from '../model/status';

describe('Time', () => {
  const iso = '2026-05-01T04:00:00Z';
  it('shows the viewer’s zone, with the job’s zone and UTC on hover', async () => {
    renderWith(<DateTime iso={iso} viewerZone="Europe/Berlin" timeZone="America/New_York" />);
    const shown = screen.getByText(/01 May 2026, 06:00:00/);
    expect(shown).toHaveAttribute('data-zone', 'Europe/Berlin');
    await userEvent.hover(shown);
    const card = await screen.findByTestId('time-zones');
    expect(within(card).getByText(/^Your time \(Europe\/Berlin\): .*01 May 2026, 06:00:00$/)).toBeInTheDocument();
    expect(within(card).getByText(/^Job's time \(America\/New_York\): .*01 May 2026, 00:00:00$/)).toBeInTheDocument();
    expect(within(card).getByText(/^UTC \(UTC\): .*01 May 2026, 04:00:00$/)).toBeInTheDocument();
  });
  it('opens the zones on keyboard focus too', async () => {
    renderWith(<TimeAgo iso={iso} viewerZone="Asia/Tokyo" timeZone="UTC" />);
    await userEvent.tab();
    const card = await screen.findByTestId('time-zones');
    expect(within(card).getByText(/^Your time \(Asia\/Tokyo\): .*01 May 2026, 13:00:00$/)).toBeInTheDocument();
    expect(within(card).getByText(/^Job's time \(UTC\): .*01 May 2026, 04:00:00$/)).toBeInTheDocument();
  });
  it('lists each zone once', () => {
    expect(zonedLines(iso, 'UTC', 'UTC').map((l) => l.zone)).toEqual(['UTC']);
    expect(zonedLines(iso, 'Europe/Paris', 'Europe/Paris').map((l) => l.zone)).toEqual(['Europe/Paris', 'UTC']);
    expect(zonedLines(iso, 'Europe/Paris').map((l) => l.zone)).toEqual(['Europe/Paris', 'UTC']);
  });
  it('shows a dash for no time', () => {
    renderWith(<DateTime iso={null} />);
    expect(screen.getByText('—')).toBeInTheDocument();
  });
});

describe('ActionButton reasons', () => {
  it('tells a viewer on hover that the operator role is needed', async () => {
    renderWith(<ActionButton need="OPERATOR">Pause</ActionButton>, { name: 'v', role: 'VIEWER' });
    const button = screen.getByRole('button', { name: 'Pause' });
    expect(button).toBeDisabled();
    expect(button).toHaveAccessibleDescription('Needs the operator role; you are a viewer.');
    await userEvent.hover(screen.getByLabelText('Needs the operator role; you are a viewer.'));
    expect(await screen.findByRole('tooltip')).toHaveTextContent('Needs the operator role; you are a viewer.');
  });
  it('tells it on keyboard focus', async () => {
    renderWith(<ActionButton need="APPROVER">Approve</ActionButton>, { name: 'o', role: 'OPERATOR' });
    await userEvent.tab();
    expect(screen.getByLabelText('Needs the approver role; you are an operator.')).toHaveFocus();
    expect(await screen.findByRole('tooltip')).toHaveTextContent('Needs the approver role; you are an operator.');
  });
  it('is disabled for every role once the token is refused', () => {
    renderWith(
      <ViewerProvider viewer={{ name: 'root', role: 'ADMIN' }} signedOut>
        <ActionButton need="OPERATOR">Cancel</ActionButton>
      </ViewerProvider>,
    );
    const button = screen.getByRole('button', { name: 'Cancel' });
    expect(button).toBeDisabled();
    expect(button).toHaveAccessibleDescription(SIGNED_OUT_REASON);
  });
});

// FakeSocket is a graphql-transport-ws server in the test: it acknowledges connection_init,
// and revoke() closes the socket the way the server does for a revoked token.
class FakeSocket {
  static CONNECTING = 0;
  static OPEN = 1;
  static CLOSING = 2;
  static CLOSED = 3;
  static made: FakeSocket[] = [];
  readyState = FakeSocket.CONNECTING;
  protocol: string;
  onopen: ((e: unknown) => void) | null = null;
  onclose: ((e: unknown) => void) | null = null;
  onerror: ((e: unknown) => void) | null = null;
  onmessage: ((e: { data: string }) => void) | null = null;
  constructor(_url: string, protocol: string) {
    this.protocol = protocol;
    FakeSocket.made.push(this);
    queueMicrotask(() => {
      this.readyState = FakeSocket.OPEN;
      this.onopen?.({});
    });
  }
  send(data: string): void {
    const msg = JSON.parse(data) as { type: string };
    if (msg.type === 'connection_init') queueMicrotask(() => this.onmessage?.({ data: JSON.stringify({ type: 'connection_ack' }) }));
  }
  close(code = 1000, reason = ''): void {
    if (this.readyState === FakeSocket.CLOSED) return;
    this.readyState = FakeSocket.CLOSED;
    this.onclose?.({ code, reason, wasClean: true });
  }
  revoke(): void {
    this.close(4401, 'unauthenticated: unknown or revoked token');
  }
}

describe('a revoked token', () => {
  afterEach(() => {
    FakeSocket.made = [];
    vi.useRealTimers();
  });
  it('moves the live socket to refused, signs out once and stops retrying', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval'] });
    const onUnauthenticated = vi.fn();
    const baton = createBatonClient({ token: 'bt_x', onUnauthenticated, origin: 'http://console.test', webSocketImpl: FakeSocket });
    const states: SocketState[] = [];
    baton.socket.subscribe(() => states.push(baton.socket.get()));
    const errors: unknown[] = [];
    baton.ws.subscribe({ query: 'subscription { alertRaised { id } }' }, { next: () => undefined, error: (e) => errors.push(e), complete: () => undefined });
    await act(async () => {
      await vi.advanceTimersByTimeAsync(10);
    });
    expect(baton.socket.get()).toBe('connected');

    const socket = FakeSocket.made[0];
    expect(socket).toBeDefined();
    act(() => socket?.revoke());
    expect(baton.socket.get()).toBe('refused');
    expect(onUnauthenticated).toHaveBeenCalledTimes(1);
    expect(states).not.toContain('reconnecting');

    // However long the console stays open, it does not dial again.
    await act(async () => {
      await vi.advanceTimersByTimeAsync(120_000);
    });
    expect(FakeSocket.made).toHaveLength(1);
    expect(baton.socket.get()).toBe('refused');
    expect(onUnauthenticated).toHaveBeenCalledTimes(1);
    baton.dispose();
  });
});

describe('alertBadges', () => {
  const a = (over: Partial<Parameters<typeof alertBadges>[0][number]>) => ({
    kind: 'HEARTBEAT_MISSED' as const,
    value: 1,
    severity: 'WARNING',
    acknowledgedBy: null,
    silencedUntil: null,
    ...over,
  });
  it('counts unacknowledged, unsilenced alarms and the ambiguous queue', () => {
    expect(
      alertBadges([
        a({}),
        a({ severity: 'CRITICAL', acknowledgedBy: 'alice' }),
        a({ kind: 'AMBIGUOUS_EFFECT', value: 3, severity: 'CRITICAL', silencedUntil: '2999-01-01T00:00:00Z' }),
        a({ kind: 'AMBIGUOUS_EFFECT', value: 2, severity: 'CRITICAL' }),
      ]),
    ).toEqual({ unacknowledged: 2, critical: true, ambiguous: 5 });
    expect(alertBadges([])).toEqual({ unacknowledged: 0, critical: false, ambiguous: 0 });
  });
});

describe('audit filters and links', () => {
  it('reads filters from the URL and sends only the set ones', () => {
    const f = auditFiltersFrom(new URLSearchParams('actor=alice&outcome=FORBIDDEN&since=2026-05-01T10:00'));
    const { filter, errors } = auditFilterInput(f);
    expect(filter['actor']).toBe('alice');
    expect(filter['outcome']).toBe('FORBIDDEN');
    expect(filter['since']).toBe(new Date('2026-05-01T10:00').toISOString());
    expect(Object.keys(filter).sort()).toEqual(['actor', 'outcome', 'since']);
    expect(errors).toEqual({});
  });
  it('says which time it cannot read', () => {
    expect(auditFilterInput({ actor: '', action: '', target: '', outcome: '', since: 'soon', until: '' }).errors).toEqual({ since: 'Not a date and time' });
  });
  it('links each kind of target', () => {
    const run = (n: string) => `/admin/runs/${n}`;
    expect(auditTargetLink('job:pay outs', run)).toEqual({ to: '/admin/jobs/pay%20outs', label: 'job pay outs' });
    expect(auditTargetLink('run:42', run)?.to).toBe('/admin/runs/42');
    expect(auditTargetLink('downstream:provider', run)).toEqual({ to: '/admin/downstreams', label: 'downstream provider' });
    // A cluster-wide alarm names no job, so its title has no dangling dash.
    expect(alertTitle({ kind: 'DOWNSTREAM_LIMIT_DEGRADED' as AlertKind, jobName: '' })).toBe(alertKindLabel('DOWNSTREAM_LIMIT_DEGRADED' as AlertKind));
    expect(alertTitle({ kind: 'AMBIGUOUS_EFFECT' as AlertKind, jobName: 'pay' })).toBe(`${alertKindLabel('AMBIGUOUS_EFFECT' as AlertKind)} — pay`);
    expect(auditTargetLink('run:abc', run)).toBeNull();
    expect(auditTargetLink('replay:7', run)?.to).toBe('/admin/replays');
    expect(auditTargetLink('ledger:9', run)).toBeNull();
    expect(auditTargetLink('alert:HEARTBEAT_MISSED:run:5', run)?.to).toBe('/admin/alerts');
    expect(auditTargetLink('cluster', run)).toBeNull();
  });
});

