// The result ledger: entries by job, state and target, and resolving ambiguous effects.
import { graphql } from '../gql';
import type { AmbiguousResolution, LedgerState, ReconcileStatus } from '../gql/graphql';

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

/** A target's history across runs and generations: its ledger entries and its errors. */
export const TargetQuery = graphql(`
  query Target($jobName: String!, $targetKey: String!, $first: Int, $after: String, $errorsAfter: String) {
    target(jobName: $jobName, targetKey: $targetKey) {
      jobName
      targetKey
      job {
        id
        name
        riskLevel
      }
      entries(first: $first, after: $after) {
        nodes {
          ...LedgerEntryFields
          inputHash
          createdAt
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
      errors(first: $first, after: $errorsAfter) {
        nodes {
          itemKey
          failureClass
          message
          attempt
          createdAt
          run {
            id
            generation
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

/** Resolves many entries in doubt with one note: one audit entry lists them all. */
export const ResolveAmbiguousManyMutation = graphql(`
  mutation ResolveAmbiguousMany($input: ResolveAmbiguousManyInput!) {
    resolveAmbiguousMany(input: $input) {
      ledgerEntries {
        id
        targetKey
        state
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

/** Asks for reconciles of the selected entries, or of all of a job's. */
export const ReconcileEntriesMutation = graphql(`
  mutation ReconcileEntries($input: ReconcileEntriesInput!) {
    reconcileEntries(input: $input) {
      reconcileRequests {
        ...ReconcileRequestFields
      }
      more
      userErrors {
        code
        message
        field
      }
    }
  }
`);

/** targetPath is the console URL of a target's history; the key may hold any characters. */
export function targetPath(jobName: string, targetKey: string): string {
  return `/admin/jobs/${encodeURIComponent(jobName)}/targets/${encodeURIComponent(targetKey)}`;
}

/**
 * attemptText shows a ledger entry's or error's attempt: 0 means the target was failed or
 * rejected without a call being made (Run.Fail), which "Attempt 0" would hide.
 */
export function attemptText(attempt: number): string {
  return attempt > 0 ? String(attempt) : 'not called';
}

/**
 * resolveBlockedBy says why a hand resolution (of one entry or many) cannot be sent, or null:
 * the server needs a resolution, a note for either, and evidence to confirm.
 */
export function resolveBlockedBy(resolution: AmbiguousResolution | null, evidenceRef: string, note: string): string | null {
  if (!resolution) return 'Choose whether the effect happened.';
  if (resolution === 'CONFIRMED' && evidenceRef.trim() === '') return 'Confirming an effect needs evidence (a provider reference, a screenshot link).';
  if (note.trim() === '') return 'Say why in a note: it is required for either resolution.';
  return null;
}
