import { describe, expect, it } from 'vitest';

import { reconcileView } from './ledger';

describe('reconcile request view', () => {
  it('shows reconciling… while a request is open', () => {
    expect(reconcileView({ status: 'PENDING', message: '', attempt: 0 })).toMatchObject({ open: true, label: 'reconciling… (waiting for a worker)' });
    expect(reconcileView({ status: 'PENDING', message: 'the worker died', attempt: 1 })).toMatchObject({ open: true, label: 'reconciling… (waiting for another worker)' });
    expect(reconcileView({ status: 'RUNNING', message: '', attempt: 1 })).toMatchObject({ open: true, label: 'reconciling…' });
  });
  it('shows the outcome once it ends', () => {
    expect(reconcileView({ status: 'DONE', resultState: 'NOT_APPLIED', message: 'no effect', attempt: 1 })).toEqual({ open: false, color: 'green', label: 'reconciled as NOT_APPLIED' });
    const failed = reconcileView({ status: 'FAILED', message: 'the reconcile hook did not answer within 30s', attempt: 1 });
    expect(failed.open).toBe(false);
    expect(failed.color).toBe('orange');
    expect(failed.label).toContain('did not answer within 30s');
  });
});
