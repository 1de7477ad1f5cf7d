// Runs: the summary every list shows, the full run page, cancelling, and live updates.
import { graphql } from '../gql';
import type { RunSummaryFieldsFragment } from '../gql/graphql';

export const RunSummaryFields = graphql(`
  fragment RunSummaryFields on Run {
    id
    number
    jobName
    status
    trigger
    mode
    attempt
    requestedBy
    instance
    generation
    cancelRequested
    pauseRequested
    stopReason
    startedAt
    finishedAt
    message
    needsAttention
    attention {
      failed
      rejected
      ambiguous
    }
    progress {
      total
      processed
      succeeded
      failed
      skipped
      ambiguous
      percent
    }
  }
`);

export const RunShardFields = graphql(`
  fragment RunShardFields on RunShard {
    key
    index
    spec
    status
    instance
    processed
    succeeded
    failed
    skipped
    ambiguous
    total
    percent
    checkpoint
    leaseAgeSeconds
    heartbeatAt
    attempt
    resumeAt
    message
  }
`);

export const RunLiveFields = graphql(`
  fragment RunLiveFields on Run {
    ...RunSummaryFields
    checkpoint
    startCheckpoint
    leaseUntil
    heartbeatAt
    activatedAt
    cancelRequestedBy
    shardTotal
    shardKey
    shardOf {
      id
    }
    shards {
      ...RunShardFields
    }
  }
`);

export const RunQuery = graphql(`
  query Run($id: ID!) {
    run(id: $id) {
      ...RunLiveFields
      jobVersion
      scheduledFor
      job {
        id
        name
        timezone
        riskLevel
        leaseSeconds
        autoResume {
          enabled
          maxAttempts
        }
      }
      resumedFrom {
        id
        status
        checkpoint
      }
      replayRequest {
        id
        kind
        requestedBy
        decidedBy
        sourceRun {
          id
        }
      }
      autoResume {
        outcome
        dueAt
        maxAttempts
        resumedBy {
          id
          status
        }
      }
      ledgerSummary {
        state
        count
      }
      events {
        at
        kind
        detail
        actor
        shard
      }
    }
  }
`);

export const RunErrorsQuery = graphql(`
  query RunErrors($id: ID!, $first: Int, $after: String, $failureClass: String, $search: String) {
    run(id: $id) {
      id
      jobName
      errors(first: $first, after: $after, failureClass: $failureClass, search: $search) {
        totalCount
        nodes {
          itemKey
          failureClass
          message
          attempt
          createdAt
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

export const RunsQuery = graphql(`
  query Runs($jobName: String, $status: [RunStatus!], $first: Int, $after: String) {
    runs(jobName: $jobName, status: $status, first: $first, after: $after) {
      nodes {
        ...RunSummaryFields
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const RunTimelineQuery = graphql(`
  query RunTimeline($id: ID!) {
    run(id: $id) {
      id
      status
      finishedAt
      events {
        at
        kind
        detail
        actor
        shard
      }
    }
  }
`);

export const AllRunsQuery = graphql(`
  query AllRuns($filter: RunsFilter, $first: Int, $after: String) {
    runs(filter: $filter, first: $first, after: $after) {
      nodes {
        ...RunSummaryFields
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const CancelRunsMutation = graphql(`
  mutation CancelRuns($runIds: [ID!]!) {
    cancelRuns(input: { runIds: $runIds }) {
      runs {
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

export const RunProgressSubscription = graphql(`
  subscription RunProgress($runId: ID!) {
    runProgress(runId: $runId) {
      ...RunLiveFields
    }
  }
`);

export const RunEventsSubscription = graphql(`
  subscription RunEvents($jobName: String) {
    runEvents(jobName: $jobName) {
      kind
      run {
        ...RunSummaryFields
      }
    }
  }
`);

export const CancelRunMutation = graphql(`
  mutation CancelRun($runId: ID!) {
    cancelRun(input: { runId: $runId }) {
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

export type RunSummary = RunSummaryFieldsFragment;

/**
 * runNumber is the number inside a run's global id (base64 of "Run:123"), for display:
 * "#123". Unknown shapes come back as the id itself.
 */
export function runNumber(id: string): string {
  try {
    const decoded = atob(id);
    const i = decoded.lastIndexOf(':');
    if (i >= 0 && /^\d+$/.test(decoded.slice(i + 1))) return decoded.slice(i + 1);
  } catch {
    // not base64: show as is
  }
  return id;
}

/**
 * runIdOfNumber is the global id of run number n (base64 of "Run:n"): what a /admin/runs/42
 * URL and the CLI's run numbers name.
 */
export function runIdOfNumber(n: number): string {
  return btoa(`Run:${n}`);
}

/** runPath is the console URL of a run. */
export function runPath(id: string): string {
  return `/admin/runs/${encodeURIComponent(id)}`;
}

/** jobPath is the console URL of a job. */
export function jobPath(name: string): string {
  return `/admin/jobs/${encodeURIComponent(name)}`;
}
