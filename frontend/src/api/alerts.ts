// Alarms: the active list, their history, acknowledgement and silence, and the live stream.
import { graphql } from '../gql';
import type { AlertFieldsFragment } from '../gql/graphql';

export const AlertFields = graphql(`
  fragment AlertFields on Alert {
    id
    episodeId
    kind
    severity
    jobName
    target
    message
    value
    since
    firedAt
    resolvedAt
    active
    acknowledgedBy
    acknowledgedAt
    silencedUntil
    silencedBy
    job {
      id
      timezone
    }
    run {
      id
    }
  }
`);

export const AlertsQuery = graphql(`
  query Alerts($includeSilenced: Boolean) {
    alerts(includeSilenced: $includeSilenced) {
      ...AlertFields
    }
  }
`);

export const AlertHistoryQuery = graphql(`
  query AlertHistory($jobName: String, $first: Int, $after: String) {
    alertHistory(jobName: $jobName, first: $first, after: $after) {
      nodes {
        ...AlertFields
      }
      pageInfo {
        hasNextPage
        endCursor
      }
    }
  }
`);

export const AcknowledgeAlertMutation = graphql(`
  mutation AcknowledgeAlert($input: AcknowledgeAlertInput!) {
    acknowledgeAlert(input: $input) {
      alert {
        ...AlertFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const SilenceAlertMutation = graphql(`
  mutation SilenceAlert($input: SilenceAlertInput!) {
    silenceAlert(input: $input) {
      alert {
        ...AlertFields
      }
      userErrors {
        field
        message
        code
      }
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

/** The counts the navigation's badges show. */
export interface AlertBadges {
  /** Active alarms no one has acknowledged and no silence hides. */
  unacknowledged: number;
  /** Whether any of those is CRITICAL. */
  critical: boolean;
  /** Targets in the ambiguous queue, across jobs (the AMBIGUOUS_EFFECT alarms' counts). */
  ambiguous: number;
}

/** alertBadges counts, from every active alarm (silenced ones included), what the badges show. */
export function alertBadges(alerts: readonly Pick<AlertFieldsFragment, 'kind' | 'value' | 'severity' | 'acknowledgedBy' | 'silencedUntil'>[]): AlertBadges {
  let unacknowledged = 0;
  let critical = false;
  let ambiguous = 0;
  for (const a of alerts) {
    if (a.kind === 'AMBIGUOUS_EFFECT') ambiguous += a.value;
    if (a.acknowledgedBy || a.silencedUntil) continue;
    unacknowledged++;
    if (a.severity === 'CRITICAL') critical = true;
  }
  return { unacknowledged, critical, ambiguous };
}

/** Silence durations the console offers, in seconds. */
export const SILENCE_CHOICES: readonly { label: string; seconds: number }[] = [
  { label: '15 minutes', seconds: 15 * 60 },
  { label: '1 hour', seconds: 3600 },
  { label: '4 hours', seconds: 4 * 3600 },
  { label: '1 day', seconds: 86400 },
  { label: '7 days', seconds: 7 * 86400 },
];
