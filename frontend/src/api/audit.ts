// The audit log: every mutation, who asked, and what came of it.
import { graphql } from '../gql';

export const AuditLogQuery = graphql(`
  query AuditLog($first: Int, $after: String) {
    auditLog(first: $first, after: $after) {
      nodes {
        id
        actor
        action
        target
        arguments
        outcome
        createdAt
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);
