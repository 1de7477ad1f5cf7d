// Notifications: the channels alarms are delivered to, their routes, the outbox's deliveries,
// and the mutations that change them (admins) or send a test (operators).
import { graphql } from '../gql';

export const NotificationChannelFields = graphql(`
  fragment NotificationChannelFields on NotificationChannel {
    id
    name
    kind
    url
    secretSet
    secretHint
    ratePerMinute
    burst
    updatedAt
    updatedBy
    routes {
      id
      kinds
      jobs
      minSeverity
    }
  }
`);

export const NotificationsQuery = graphql(`
  query Notifications {
    notificationChannels {
      ...NotificationChannelFields
    }
    notificationDeliveries(first: 20) {
      id
      channelId
      kind
      alertKey
      status
      attempts
      lastError
      createdAt
      sentAt
    }
  }
`);

export const SaveNotificationChannelMutation = graphql(`
  mutation SaveNotificationChannel($input: SaveNotificationChannelInput!) {
    saveNotificationChannel(input: $input) {
      channel {
        ...NotificationChannelFields
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const DeleteNotificationChannelMutation = graphql(`
  mutation DeleteNotificationChannel($input: DeleteNotificationChannelInput!) {
    deleteNotificationChannel(input: $input) {
      deletedId
      userErrors {
        field
        message
        code
      }
    }
  }
`);

export const SendTestNotificationMutation = graphql(`
  mutation SendTestNotification($input: SendTestNotificationInput!) {
    sendTestNotification(input: $input) {
      delivery {
        id
        status
      }
      userErrors {
        field
        message
        code
      }
    }
  }
`);
