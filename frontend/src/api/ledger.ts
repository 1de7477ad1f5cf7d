// The result ledger: entries by job, state and target, and resolving ambiguous effects.
import { graphql } from '../gql';

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

export const ReconcileEntryMutation = graphql(`
  mutation ReconcileEntry($entryId: ID!) {
    reconcileEntry(input: { entryId: $entryId }) {
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

/** The ledger summary as a map, absent states counting zero. */
export function countsByState<S extends string>(summary: ReadonlyArray<{ state: S; count: number }>): Map<S, number> {
  const m = new Map<S, number>();
  for (const c of summary) m.set(c.state, (m.get(c.state) ?? 0) + c.count);
  return m;
}
