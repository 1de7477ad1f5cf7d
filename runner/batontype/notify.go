package batontype

import "time"

// ChannelKind is the kind of receiver a notification channel delivers to.
type ChannelKind string

// Channel kinds.
const (
	// ChannelWebhook posts the alarm as JSON, signed with HMAC-SHA256 over the timestamp and
	// the body (X-Baton-Timestamp, X-Baton-Signature: v1=<hex>).
	ChannelWebhook ChannelKind = "WEBHOOK"
	// ChannelSlack posts {"text", "blocks"} to a Slack-compatible incoming webhook, whose URL is
	// the channel's secret.
	ChannelSlack ChannelKind = "SLACK"
	// ChannelPagerDuty posts a PagerDuty Events v2 event (trigger, resolve) whose routing key
	// is the channel's secret and whose dedup_key is the alarm's key.
	ChannelPagerDuty ChannelKind = "PAGERDUTY"
)

// Valid reports whether k is a known kind.
func (k ChannelKind) Valid() bool {
	return k == ChannelWebhook || k == ChannelSlack || k == ChannelPagerDuty
}

// The bounds of a channel's and a route's settings.
const (
	MaxChannelNameLen    = 100
	MaxChannelURLLen     = 2048
	MaxChannelSecretLen  = 1024
	MaxChannelRate       = 6000 // deliveries per minute
	MaxChannelBurst      = 1000
	MaxRouteJobs         = 100
	MaxRouteJobPatternLn = 200
	// DefaultChannelRate and DefaultChannelBurst are a new channel's limits.
	DefaultChannelRate  = 30
	DefaultChannelBurst = 5
	// DefaultPagerDutyURL is the PagerDuty Events v2 endpoint a PAGERDUTY channel posts to
	// when it names no URL.
	DefaultPagerDutyURL = "https://events.pagerduty.com/v2/enqueue"
)

// NotificationChannel is a receiver of alarm notifications as the API shows it: its secret is
// never part of it, only whether it is set and a hint of which it is.
type NotificationChannel struct {
	ID   int64
	Name string
	Kind ChannelKind
	URL  string // the webhook's or PagerDuty's endpoint; "" for SLACK (its URL is secret)
	// URLSecret says URL carries credentials (userinfo, a query, a path): it is stored sealed
	// and URLShown is all a caller below ADMIN sees of it.
	URLSecret bool
	// URLShown is URL as anyone may see it: URL itself, or scheme://host/… when URLSecret.
	URLShown      string
	SecretSet     bool
	SecretHint    string // "env:NAME", or the last characters of a stored secret
	RatePerMinute int
	Burst         int
	CreatedAt     time.Time
	UpdatedAt     time.Time
	UpdatedBy     string
}

// ChannelInput creates a channel or changes one. A nil field stays as it is on an update
// (and takes its default on a create). Secret is a literal (stored encrypted) or "env:NAME";
// "" on an update keeps the stored one.
type ChannelInput struct {
	Name          *string
	Kind          ChannelKind // create only
	URL           *string
	Secret        *string
	RatePerMinute *int
	Burst         *int
	// Routes, when not nil, replace the channel's routes (their ChannelID is the channel's),
	// in the same transaction as the channel.
	Routes *[]NotificationRoute
}

// MaxChannelRoutes bounds the routes of one channel.
const MaxChannelRoutes = 50

// Severity orders alarms; a route takes those of its minimum severity and above.
type Severity string

// Severities.
const (
	SeverityWarning  Severity = "WARNING"
	SeverityCritical Severity = "CRITICAL"
)

// NotificationRoute sends the alarms of some kinds, of some jobs, of a severity at least
// MinSeverity to a channel. Empty Kinds or Jobs match all.
type NotificationRoute struct {
	ID          int64
	ChannelID   int64
	Kinds       []AlertKind
	Jobs        []string // globs: * any run of characters, ? one character
	MinSeverity Severity
	CreatedAt   time.Time
	CreatedBy   string
}

// NotificationKind says what a delivery tells its channel.
type NotificationKind string

// Notification kinds.
const (
	NotifyTrigger NotificationKind = "TRIGGER"
	NotifyResolve NotificationKind = "RESOLVE"
	NotifyTest    NotificationKind = "TEST"
)

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending DeliveryStatus = "PENDING"
	DeliverySent    DeliveryStatus = "SENT"
	DeliveryFailed  DeliveryStatus = "FAILED" // gave up after the last attempt
)

// AlertPayload is what a delivery says of its alarm, as it was when the delivery was queued.
type AlertPayload struct {
	Key        string     `json:"key"`
	EpisodeID  int64      `json:"episodeId,omitempty"`
	Kind       AlertKind  `json:"kind"`
	Severity   string     `json:"severity"`
	JobName    string     `json:"jobName"`
	RunID      *int64     `json:"runId,omitempty"`
	Target     *string    `json:"target,omitempty"`
	Message    string     `json:"message"`
	Value      float64    `json:"value"`
	Since      time.Time  `json:"since"`
	FiredAt    time.Time  `json:"firedAt"`
	ResolvedAt *time.Time `json:"resolvedAt,omitempty"`
}

// Delivery is one row of the notification outbox.
type Delivery struct {
	ID            int64
	EpisodeID     *int64
	ChannelID     int64
	Kind          NotificationKind
	Alert         AlertPayload
	Status        DeliveryStatus
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	CreatedAt     time.Time
	SentAt        *time.Time
}

// DeliveryFilter narrows the outbox. Zero fields match everything.
type DeliveryFilter struct {
	ChannelID int64
	Status    DeliveryStatus
	BeforeID  int64
	Limit     int
}

// NotificationMessage is a delivery ready to send: its channel, with the channel's secret in
// the clear (the webhook's HMAC key, the Slack URL, the PagerDuty routing key).
type NotificationMessage struct {
	DeliveryID int64
	Kind       NotificationKind
	Attempt    int // 1 for the first
	Alert      AlertPayload
	Channel    NotificationChannel
	Secret     string
	// Source names the cluster's sender (the instance that sends), as PagerDuty's source.
	Source string
}

// KnownAlertKinds are the alarm kinds a route may name.
var KnownAlertKinds = []AlertKind{AlertHeartbeatMissed, AlertCheckpointStalled, AlertTargetRetried, AlertDownstreamErrors,
	AlertNoLedgerWrites, AlertAmbiguousEffect, AlertAutoResumeExhausted, AlertDownstreamDegraded, AlertScheduledFireBlocked}
