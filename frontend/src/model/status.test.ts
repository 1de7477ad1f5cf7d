import { describe, expect, it } from 'vitest';

import type { RunStatus } from '../gql/graphql';
import { isActive, LEDGER_STATES, ledgerStateMeta, roleAtLeast, roleReason, runStatusMeta, stopReasonWords, verdictMeta } from './status';

describe('run status mapping', () => {
  it.each<[RunStatus, boolean, string]>([
    ['STARTING', true, 'blue'],
    ['RUNNING', true, 'cyan'],
    ['SUCCEEDED', false, 'green'],
    ['FAILED', false, 'red'],
    ['CANCELLED', false, 'gray'],
    ['PAUSED', false, 'yellow'],
  ])('%s: active=%s, %s', (status, active, color) => {
    expect(isActive(status)).toBe(active);
    expect(runStatusMeta(status).color).toBe(color);
    expect(runStatusMeta(status).label).toMatch(/^[A-Z][a-z]+$/);
  });
});

describe('ledger states', () => {
  it('has words for every state', () => {
    expect(LEDGER_STATES).toHaveLength(10);
    for (const s of LEDGER_STATES) expect(ledgerStateMeta(s).description.length).toBeGreaterThan(10);
  });
  it('marks ambiguity distinctly', () => {
    expect(ledgerStateMeta('AMBIGUOUS_EFFECT').label).toBe('Ambiguous');
    expect(ledgerStateMeta('AMBIGUOUS_EFFECT').description).toMatch(/reconcile/);
  });
});

describe('verdicts and stop reasons', () => {
  it('colours verdicts', () => {
    expect(verdictMeta('OK').color).toBe('green');
    expect(verdictMeta('WARN').color).toBe('yellow');
    expect(verdictMeta('BLOCK').color).toBe('red');
  });
  it('says why a run stopped', () => {
    expect(stopReasonWords('MAINTENANCE')).toBe('cluster maintenance');
    expect(stopReasonWords('LEASE_EXPIRED')).toMatch(/lease expired/);
  });
});

describe('roles', () => {
  it('orders viewer < operator < approver < admin', () => {
    expect(roleAtLeast('VIEWER', 'OPERATOR')).toBe(false);
    expect(roleAtLeast('OPERATOR', 'OPERATOR')).toBe(true);
    expect(roleAtLeast('APPROVER', 'OPERATOR')).toBe(true);
    expect(roleAtLeast('OPERATOR', 'APPROVER')).toBe(false);
    expect(roleAtLeast('ADMIN', 'APPROVER')).toBe(true);
  });
  it('explains a missing role', () => {
    expect(roleReason('VIEWER', 'OPERATOR')).toBe('Needs the operator role; you are a viewer.');
    expect(roleReason('OPERATOR', 'APPROVER')).toBe('Needs the approver role; you are an operator.');
    expect(roleReason('ADMIN', 'APPROVER')).toBeNull();
  });
});
