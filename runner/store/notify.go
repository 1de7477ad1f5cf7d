package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Notifications keeps the channels alarms are delivered to, the routes that choose them, and
// the outbox of deliveries every instance works (docs/adr/0021-alert-notifications.md).
// SyncAlerts queues the deliveries of the episodes it opens and resolves, in its own
// transaction.
type Notifications interface {
	// NotificationChannels returns every channel by name, with its stored secret.
	NotificationChannels(ctx context.Context) ([]StoredChannel, error)
	// CreateChannel records c (its ID, times and token bucket are the store's) with routes, in
	// one transaction, and returns it. CONFLICT: a channel of that name exists.
	CreateChannel(ctx context.Context, c StoredChannel, routes []bt.NotificationRoute, actor string) (StoredChannel, error)
	// UpdateChannel sets channel id to what change makes of it, under the row's lock, and
	// replaces its routes with *routes when routes is not nil, in one transaction; change
	// returns an error to refuse, and nothing changes. bt.ErrNotFound: no such channel;
	// CONFLICT: the new name is another channel's.
	UpdateChannel(ctx context.Context, id int64, actor string, change func(*StoredChannel) error, routes *[]bt.NotificationRoute) (StoredChannel, error)
	// DeleteChannel removes channel id with its routes and deliveries. bt.ErrNotFound: no
	// such channel.
	DeleteChannel(ctx context.Context, id int64) error
	// NotificationRoutes returns the routes, of one channel when channelID is not 0, by id.
	NotificationRoutes(ctx context.Context, channelID int64) ([]bt.NotificationRoute, error)
	// CreateRoute records r (its ID and time are the store's). bt.ErrNotFound: no such channel.
	CreateRoute(ctx context.Context, r bt.NotificationRoute) (bt.NotificationRoute, error)
	// DeleteRoute removes route id. bt.ErrNotFound: no such route.
	DeleteRoute(ctx context.Context, id int64) error
	// HasRoutes reports whether any route exists: whether alarms need judging for delivery.
	HasRoutes(ctx context.Context) (bool, error)
	// QueueTest queues a TEST delivery of p to channel id. bt.ErrNotFound: no such channel.
	QueueTest(ctx context.Context, id int64, p bt.AlertPayload) (bt.Delivery, error)
	// ClaimDeliveries takes up to max due deliveries, oldest first, as each channel's token
	// bucket allows (a channel whose bucket is empty keeps its deliveries waiting), and holds
	// them for hold: a claimed delivery is due again after hold unless FinishDelivery settles
	// it. A RESOLVE waits for its episode's TRIGGER to the same channel to be settled.
	// Instances claim at once without taking the same delivery. It also returns how many
	// deliveries are pending in all.
	ClaimDeliveries(ctx context.Context, max int, hold time.Duration) ([]ClaimedDelivery, int, error)
	// FinishDelivery settles a claimed delivery: SENT when errText is "", else PENDING again
	// after retryIn with errText recorded, or FAILED when giveUp.
	FinishDelivery(ctx context.Context, id int64, errText string, retryIn time.Duration, giveUp bool) error
	// Deliveries lists deliveries, newest first.
	Deliveries(ctx context.Context, f bt.DeliveryFilter) ([]bt.Delivery, error)
}

// StoredChannel is a channel as the store keeps it: Secret is its stored form,
// "enc:v1:<base64>" or "env:NAME", never the secret in the clear.
type StoredChannel struct {
	bt.NotificationChannel
	Secret string
}

// ClaimedDelivery is a delivery an instance holds to send, with its channel.
type ClaimedDelivery struct {
	bt.Delivery
	Channel StoredChannel
}
