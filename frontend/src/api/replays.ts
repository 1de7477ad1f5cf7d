// Replays: the preflight, requests, and the four-eyes approval queue. A RESTART the gate holds
// (HIGH risk, targets in doubt) is a request of kind RESTART in the same queue.
import { graphql } from '../gql';

export const PreflightFields = graphql(`
  fragment PreflightFields on ReplayPreflight {
    jobName
    kind
    generation
    scope
    riskLevel
    confirmed
    failedByClass {
      state
      count
    }
    ambiguous
    inFlight
    targetsInScope
    fixQueue
    lastCheckpointAgeSeconds
    downstreamErrorRate
    downstreamCalls
    jobVersionChanged
    runJobVersion
    currentJobVersion
    requiresApproval
    approvalReasons
    blocked
    blockingReasons
    checks {
      name
      value
      threshold
      verdict
      detail
    }
    computedAt
    activeRun {
      id
      status
      replayRequest {
        id
      }
    }
  }
`);

export const ReplayPreflightQuery = graphql(`
  query ReplayPreflight($runId: ID!, $scope: ReplayScope!, $targetKeys: [String!]) {
    run(id: $runId) {
      id
      jobName
      status
      generation
      startedAt
      finishedAt
      job {
        id
        name
        riskLevel
      }
    }
    replayPreflight(runId: $runId, scope: $scope, targetKeys: $targetKeys) {
      ...PreflightFields
    }
  }
`);

export const ReplayRequestFields = graphql(`
  fragment ReplayRequestFields on ReplayRequest {
    id
    kind
    generation
    scope
    targetKeys
    status
    reason
    compensationRef
    requestedBy
    decidedBy
    decisionNote
    createdAt
    decidedAt
    executedAt
    scheduleChange {
      cron
      timezone
      enabled
      leaseSeconds
    }
    claimedUntil
    reopenReason
    job {
      id
      name
      riskLevel
    }
    sourceRun {
      id
      status
    }
    replayRun {
      id
      status
    }
    preflight {
      ...PreflightFields
    }
  }
`);

/** ReplayRequestQuery reads one request by its global id (a run's link to what started it). */
export const ReplayRequestQuery = graphql(`
  query ReplayRequest($id: ID!) {
    node(id: $id) {
      ... on ReplayRequest {
        ...ReplayRequestFields
      }
    }
  }
`);

export const ReplayRequestsQuery = graphql(`
  query ReplayRequests($status: [ReplayStatus!], $first: Int, $after: String) {
    replayRequests(status: $status, first: $first, after: $after) {
      nodes {
        ...ReplayRequestFields
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const RequestReplayMutation = graphql(`
  mutation RequestReplay($input: RequestReplayInput!) {
    requestReplay(input: $input) {
      replayRequest {
        ...ReplayRequestFields
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const ApproveReplayMutation = graphql(`
  mutation ApproveReplay($requestId: ID!, $note: String) {
    approveReplay(input: { requestId: $requestId, note: $note }) {
      replayRequest {
        ...ReplayRequestFields
      }
      run {
        id
        status
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const RejectReplayMutation = graphql(`
  mutation RejectReplay($requestId: ID!, $note: String) {
    rejectReplay(input: { requestId: $requestId, note: $note }) {
      replayRequest {
        ...ReplayRequestFields
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const RestartPreflightQuery = graphql(`
  query RestartPreflight($name: String!) {
    restartPreflight(name: $name) {
      ...PreflightFields
    }
  }
`);

export const RequestRestartMutation = graphql(`
  mutation RequestRestart($input: RequestRestartInput!) {
    requestRestart(input: $input) {
      replayRequest {
        ...ReplayRequestFields
      }
      run {
        ...RunSummaryFields
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const ExecuteReplayMutation = graphql(`
  mutation ExecuteReplay($requestId: ID!) {
    executeReplay(input: { requestId: $requestId }) {
      replayRequest {
        ...ReplayRequestFields
      }
      run {
        id
        status
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

/**
 * ownReplayRunning reports whether a preflight is blocked only because the replay just
 * requested (request id) is running: its own run is the active run. The page then says so
 * instead of showing the preflight as a red refusal of the request it just made.
 */
export function ownReplayRunning(pf: { activeRun?: { replayRequest?: { id: string } | null } | null }, requestId: string | null | undefined): boolean {
  return !!requestId && pf.activeRun?.replayRequest?.id === requestId;
}

/** replayTargetsPath is the replay page of a run for only the given targets of the scope. */
export function replayTargetsPath(runPathOfRun: string, targets: readonly string[]): string {
  const q = new URLSearchParams();
  for (const t of targets) q.append('target', t);
  return `${runPathOfRun}/replay?${q.toString()}`;
}
