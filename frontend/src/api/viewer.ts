// The caller and cluster-wide state: who is logged in, and whether maintenance is on.
import { graphql } from '../gql';

export const MeQuery = graphql(`
  query Me {
    me {
      name
      role
    }
  }
`);

export const MaintenanceQuery = graphql(`
  query Maintenance {
    maintenance
  }
`);

export const SetMaintenanceMutation = graphql(`
  mutation SetMaintenance($paused: Boolean!) {
    setMaintenance(input: { paused: $paused }) {
      maintenance
      resumedRuns {
        id
        jobName
      }
      userErrors {
        code
        message
        field
      }
    }
  }
`);
