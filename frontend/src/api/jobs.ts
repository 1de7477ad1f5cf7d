// Jobs: the dashboard list, one job's page, the schedule and auto-resume editors and the job-level mutations.
import { graphql } from '../gql';

/**
 * JOBS_PAGE_SIZE is how many jobs a page of the dashboard shows (a multiple of its 1, 2 and 3
 * columns), kept so that a page of jobs with their active and last runs stays well inside the
 * server's complexity limit (2000): 24 went over it once runs carried their attention.
 */
export const JOBS_PAGE_SIZE = 18;

export const AutoResumePolicyFields = graphql(`
  fragment AutoResumePolicyFields on AutoResumePolicy {
    enabled
    maxAttempts
    backoffSeconds
    on
  }
`);

export const JobsQuery = graphql(`
  query Jobs($first: Int, $after: String) {
    maintenance
    jobs(first: $first, after: $after) {
      nodes {
        id
        name
        description
        cron
        timezone
        enabled
        paused
        nextScheduledAt
        riskLevel
        scheduledMode
        currentGeneration
        autoResume {
          ...AutoResumePolicyFields
        }
        activeRun {
          ...RunSummaryFields
        }
        lastRun {
          ...RunSummaryFields
        }
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const JobQuery = graphql(`
  query Job($name: String!) {
    job(name: $name) {
      id
      name
      description
      cron
      timezone
      enabled
      paused
      nextScheduledAt
      nextFireTimes(n: 5)
      riskLevel
      scheduledMode
      leaseSeconds
      version
      currentGeneration
      updatedAt
      updatedBy
      autoResume {
        ...AutoResumePolicyFields
      }
      activeRun {
        ...RunSummaryFields
      }
      lastRun {
        ...RunSummaryFields
      }
      ledgerSummary {
        state
        count
      }
    }
  }
`);

export const JobRunsQuery = graphql(`
  query JobRuns($name: String!, $status: [RunStatus!], $first: Int, $after: String) {
    job(name: $name) {
      id
      runs(status: $status, first: $first, after: $after) {
        nodes {
          ...RunSummaryFields
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
`);

export const CronPreviewQuery = graphql(`
  query CronPreview($cron: String!, $timezone: String!) {
    cronPreview(cron: $cron, timezone: $timezone, n: 5) {
      valid
      nextFireTimes
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const StartJobMutation = graphql(`
  mutation StartJob($name: String!, $mode: RunMode!) {
    startJob(input: { name: $name, mode: $mode }) {
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

export const UpdateJobScheduleMutation = graphql(`
  mutation UpdateJobSchedule($input: UpdateJobScheduleInput!) {
    updateJobSchedule(input: $input) {
      job {
        id
        name
        cron
        timezone
        enabled
        leaseSeconds
        nextScheduledAt
        nextFireTimes(n: 5)
        updatedAt
        updatedBy
      }
      scheduleRequest {
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

export const PauseJobMutation = graphql(`
  mutation PauseJob($name: String!) {
    pauseJob(input: { name: $name }) {
      job {
        id
        name
        paused
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);

export const ResumeJobMutation = graphql(`
  mutation ResumeJob($name: String!) {
    resumeJob(input: { name: $name }) {
      job {
        id
        name
        paused
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

export const UpdateJobAutoResumeMutation = graphql(`
  mutation UpdateJobAutoResume($input: UpdateJobAutoResumeInput!) {
    updateJobAutoResume(input: $input) {
      job {
        id
        name
        autoResume {
          ...AutoResumePolicyFields
        }
        updatedAt
        updatedBy
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);
