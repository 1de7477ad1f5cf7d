// The result ledger: entries by job, state and target, and resolving ambiguous effects.
import { graphql } from '../gql';
import type { LedgerState, ReconcileStatus } from '../gql/graphql';

export const LedgerEntryFields = graphql(`
  fragment LedgerEntryFields on LedgerEntry {
    id
    jobName
    generation
    targetKey
    step
    state
    attempt
    idempotencyKey
    inputChanged
    external
    effectRef
    evidenceRef
    lastError
    sameErrorCount
    updatedAt
    run {
      id
    }
  }
`);

export const LedgerQuery = graphql(`
  query Ledger($jobName: String!, $state: [LedgerState!], $runId: ID, $targetPrefix: String, $first: Int, $after: String) {
    ledger(jobName: $jobName, state: $state, runId: $runId, targetPrefix: $targetPrefix, first: $first, after: $after) {
      nodes {
        ...LedgerEntryFields
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const ResolveAmbiguousMutation = graphql(`
  mutation ResolveAmbiguous($input: ResolveAmbiguousInput!) {
    resolveAmbiguous(input: $input) {
      ledgerEntry {
        ...LedgerEntryFields
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const ReconcileRequestFields = graphql(`
  fragment ReconcileRequestFields on ReconcileRequest {
    id
    status
    resultState
    message
    attempt
    entry {
      id
      targetKey
      state
    }
  }
`);

/** Asks for a reconcile: the answer is the request, PENDING; the outcome comes by subscription. */
export const ReconcileEntryMutation = graphql(`
  mutation ReconcileEntry($entryId: ID!) {
    reconcileEntry(input: { entryId: $entryId }) {
      reconcileRequest {
        ...ReconcileRequestFields
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const ReconcileRequestSubscription = graphql(`
  subscription ReconcileRequest($id: ID!) {
    reconcileRequest(id: $id) {
      ...ReconcileRequestFields
    }
  }
`);

/** How a reconcile request shows in the ambiguous queue. */
export interface ReconcileView {
  /** Still waiting for a worker or for the job's reconcile hook. */
  open: boolean;
  label: string;
  color: 'gray' | 'blue' | 'green' | 'orange';
}

/** reconcileView turns a reconcile request's state into what the queue shows. */
export function reconcileView(req: { status: ReconcileStatus; resultState?: LedgerState | null; message: string; attempt: number }): ReconcileView {
  switch (req.status) {
    case 'PENDING':
      return { open: true, color: 'gray', label: req.attempt > 0 ? 'reconciling… (waiting for another worker)' : 'reconciling… (waiting for a worker)' };
    case 'RUNNING':
      return { open: true, color: 'blue', label: 'reconciling…' };
    case 'DONE':
      return { open: false, color: 'green', label: `reconciled as ${req.resultState ?? 'resolved'}` };
    case 'FAILED':
      return { open: false, color: 'orange', label: `reconcile failed: ${req.message}` };
  }
}

/** The ledger summary as a map, absent states counting zero. */
export function countsByState<S extends string>(summary: ReadonlyArray<{ state: S; count: number }>): Map<S, number> {
  const m = new Map<S, number>();
  for (const c of summary) m.set(c.state, (m.get(c.state) ?? 0) + c.count);
  return m;
}
