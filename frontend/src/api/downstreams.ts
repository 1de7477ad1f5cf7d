// Downstreams: the outside systems jobs call, their cluster-wide limits and live figures, and
// the one mutation that changes the limits (also pause and resume).
import { graphql } from '../gql';

export const DownstreamFields = graphql(`
  fragment DownstreamFields on Downstream {
    name
    version
    updatedAt
    updatedBy
    limits {
      ...DownstreamLimitFields
    }
    defaults {
      ...DownstreamLimitFields
    }
    stats {
      windowSeconds
      callsPerSecond
      calls
      throttled
      errors
      waits
      waitSeconds
      effectiveRate
      blockedUntil
      inFlight
      quotaUsed
      degraded
    }
  }
`);

export const DownstreamLimitFields = graphql(`
  fragment DownstreamLimitFields on DownstreamLimits {
    ratePerSecond
    burst
    concurrency
    quota
    quotaWindow
    paused
  }
`);

export const DownstreamsQuery = graphql(`
  query Downstreams {
    downstreams {
      ...DownstreamFields
    }
  }
`);

export const UpdateDownstreamMutation = graphql(`
  mutation UpdateDownstream($input: UpdateDownstreamInput!) {
    updateDownstream(input: $input) {
      downstream {
        ...DownstreamFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);
