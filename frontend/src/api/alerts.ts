// Alarms: the active list and the live stream.
import { graphql } from '../gql';

export const AlertFields = graphql(`
  fragment AlertFields on Alert {
    id
    kind
    severity
    jobName
    target
    message
    value
    since
    run {
      id
    }
  }
`);

export const AlertsQuery = graphql(`
  query Alerts {
    alerts {
      ...AlertFields
    }
  }
`);

export const AlertRaisedSubscription = graphql(`
  subscription AlertRaised {
    alertRaised {
      ...AlertFields
    }
  }
`);
