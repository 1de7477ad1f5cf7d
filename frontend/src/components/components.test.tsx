import { screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';

import { renderWith } from '../test/render';
import { ActionButton } from './ActionButton';
import { RunStatusBadge } from './Badges';
import { cancelBlockedBy, restartGated, restartHint, restartRequestBlockedBy, startBlockedBy } from './JobControls';
import { checkValue } from './PreflightPanel';
import { progressPercent, RunProgressBar } from './RunProgressBar';
import { scheduleChanges } from './ScheduleEditor';
import { sparkPoints } from './Sparkline';
import { decisionBlockedBy, executeBlockedBy } from '../pages/ReplaysPage';
import { requestBlockedBy } from '../pages/ReplayPage';
import { resolveBlockedBy } from '../pages/AmbiguousPage';

describe('ActionButton', () => {
  it('is enabled for a role that may', () => {
    renderWith(<ActionButton need="OPERATOR">Cancel</ActionButton>, { name: 'op', role: 'OPERATOR' });
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeEnabled();
  });
  it('is disabled with the reason for a role that may not', () => {
    renderWith(<ActionButton need="OPERATOR">Cancel</ActionButton>, { name: 'v', role: 'VIEWER' });
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeDisabled();
    expect(screen.getByLabelText('Needs the operator role; you are a viewer.')).toBeInTheDocument();
  });
  it('gives the state reason when the role may', () => {
    renderWith(
      <ActionButton need="OPERATOR" blockedBy="No run is active.">
        Cancel
      </ActionButton>,
    );
    expect(screen.getByRole('button', { name: 'Cancel' })).toBeDisabled();
    expect(screen.getByLabelText('No run is active.')).toBeInTheDocument();
  });
});

describe('RunProgressBar', () => {
  const p = { total: 600, processed: 150, succeeded: 148, failed: 2, skipped: 0, ambiguous: 0, percent: 25 };
  it('shows percent and counts', () => {
    renderWith(<RunProgressBar progress={p} status="RUNNING" />);
    expect(screen.getByTestId('run-percent')).toHaveTextContent('25.0%');
    expect(screen.getByText('150 / 600 processed')).toBeInTheDocument();
    expect(screen.getByText('2 failed')).toBeInTheDocument();
    expect(screen.getByTestId('run-progress')).toHaveAttribute('data-percent', '25');
  });
  it('shows items when the total is unknown', () => {
    renderWith(<RunProgressBar progress={{ ...p, total: null, percent: null }} status="RUNNING" />);
    expect(screen.getByTestId('run-percent')).toHaveTextContent('150 items');
  });
  it('computes the percent', () => {
    expect(progressPercent({ ...p, percent: null })).toBe(25);
    expect(progressPercent({ ...p, percent: 130 })).toBe(100);
    expect(progressPercent({ ...p, total: null, percent: null })).toBeNull();
  });
});

describe('RunStatusBadge', () => {
  it('labels the status', () => {
    renderWith(<RunStatusBadge status="CANCELLED" />);
    expect(screen.getByTestId('run-status')).toHaveTextContent('Cancelled');
    expect(screen.getByTestId('run-status')).toHaveAttribute('data-value', 'CANCELLED');
  });
});

describe('action guards', () => {
  const run = { id: btoa('Run:7'), cancelRequested: false } as Parameters<typeof cancelBlockedBy>[0];
  it('start', () => {
    expect(startBlockedBy({ paused: false }, null, false)).toBeNull();
    expect(startBlockedBy({ paused: true }, null, false)).toMatch(/paused/);
    expect(startBlockedBy({ paused: false }, null, true)).toMatch(/Maintenance/);
    expect(startBlockedBy({ paused: false }, run, false)).toBe('Run #7 is still active: cancel it or wait for it to finish.');
  });
  it('cancel', () => {
    expect(cancelBlockedBy(null)).toBe('No run is active.');
    expect(cancelBlockedBy(run)).toBeNull();
  });
  it('replay request', () => {
    expect(requestBlockedBy('', '', false, false)).toMatch(/reason/);
    expect(requestBlockedBy('outage', '', true, false)).toMatch(/compensation/);
    expect(requestBlockedBy('outage', 'OPS-1', true, true)).toMatch(/blocks/);
    expect(requestBlockedBy('outage', 'OPS-1', true, false)).toBeNull();
  });
  it('approval: never one’s own', () => {
    expect(decisionBlockedBy({ status: 'PENDING_APPROVAL', requestedBy: 'op' }, 'op')).toMatch(/second person/);
    expect(decisionBlockedBy({ status: 'PENDING_APPROVAL', requestedBy: 'op' }, 'boss')).toBeNull();
    expect(decisionBlockedBy({ status: 'EXECUTED', requestedBy: 'op' }, 'boss')).toMatch(/decided already/);
  });
  it('restart: the preflight decides between restarting, requesting and waiting', () => {
    expect(restartGated(null)).toBeNull(); // a job that never ran: nothing to repeat
    expect(restartGated({ blocked: false, requiresApproval: false })).toBeNull();
    expect(restartGated({ blocked: false, requiresApproval: true })).toBe('approval');
    expect(restartGated({ blocked: true, requiresApproval: true })).toBe('blocked');
    expect(restartRequestBlockedBy('', '', false)).toMatch(/reason/);
    expect(restartRequestBlockedBy('new date', '', true)).toMatch(/compensation/);
    expect(restartRequestBlockedBy('new date', 'OPS-2', true)).toBeNull();
    expect(restartRequestBlockedBy('new date', '', false)).toBeNull();
    expect(restartHint('HIGH', true)).toMatch(/approves/);
    expect(restartHint('HIGH', false)).not.toMatch(/approves/); // a first run repeats nothing
    expect(restartHint('LOW', true)).toMatch(/doubt/);
  });
  it('execute: only an approved request whose run did not start', () => {
    expect(executeBlockedBy({ status: 'APPROVED', replayRun: null })).toBeNull();
    expect(executeBlockedBy({ status: 'APPROVED', replayRun: { id: 'x' } })).toMatch(/started/);
    expect(executeBlockedBy({ status: 'PENDING_APPROVAL', replayRun: null })).toMatch(/approved/);
  });
  it('execute: not while another execute holds the claim', () => {
    const now = new Date('2026-01-01T12:00:00Z');
    expect(executeBlockedBy({ status: 'APPROVED', replayRun: null, claimedUntil: '2026-01-01T12:01:00Z' }, now)).toMatch(/Another execute/);
    expect(executeBlockedBy({ status: 'APPROVED', replayRun: null, claimedUntil: '2026-01-01T11:59:00Z' }, now)).toBeNull();
    expect(executeBlockedBy({ status: 'APPROVED', replayRun: null, claimedUntil: null }, now)).toBeNull();
  });
  it('hand resolution needs evidence to confirm, and a note either way', () => {
    expect(resolveBlockedBy(null, '', 'checked')).toMatch(/Choose/);
    expect(resolveBlockedBy('CONFIRMED', '', 'checked')).toMatch(/evidence/);
    expect(resolveBlockedBy('CONFIRMED', 'PSP-1', 'checked')).toBeNull();
    expect(resolveBlockedBy('NOT_APPLIED', '', '   ')).toMatch(/note/);
    expect(resolveBlockedBy('NOT_APPLIED', '', 'provider has no record')).toBeNull();
  });
});

describe('scheduleChanges', () => {
  const job = { name: 'j', cron: '0 0 4 * * *', timezone: 'UTC', enabled: true, leaseSeconds: null };
  it('is null when nothing changed', () => expect(scheduleChanges(job, ' 0 0 4 * * * ', 'UTC', true, null)).toBeNull());
  it('sends only what changed', () => {
    expect(scheduleChanges(job, '0 30 4 * * *', 'Asia/Seoul', true, null)).toEqual({ name: 'j', cron: '0 30 4 * * *', timezone: 'Asia/Seoul' });
    expect(scheduleChanges(job, job.cron, 'UTC', false, 60)).toEqual({ name: 'j', enabled: false, leaseSeconds: 60 });
    expect(scheduleChanges({ ...job, leaseSeconds: 60 }, job.cron, 'UTC', true, null)).toEqual({ name: 'j', leaseSeconds: 0 });
  });
});

describe('small renderers', () => {
  it('scales sparkline points', () => {
    expect(sparkPoints([0, 10], 100, 20)).toBe('0.0,19.0 100.0,1.0');
    expect(sparkPoints([], 100, 20)).toBe('');
  });
  it('formats check values', () => {
    expect(checkValue('downstream errors rate', 0.052)).toBe('5.2%');
    expect(checkValue('last checkpoint age', 185)).toBe('3m 05s');
    expect(checkValue('targets in scope', 1200)).toBe('1,200');
  });
});
