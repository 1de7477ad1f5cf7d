package store

import (
	"context"
	"time"

	bt "github.com/baton-run/baton/runner/batontype"
)

// Alerts keeps the alarms' cluster-wide state: their episodes (fired, last seen, resolved),
// acknowledgements and silences. Every instance computes the same alarms from the same facts
// and records them here, so all of them show the same state and history.
type Alerts interface {
	// SyncAlerts records active as the alarms active now, by the database clock: it opens an
	// episode for each alarm without an open one, refreshes the open ones, and resolves every
	// open episode whose alarm is not in active. It returns the open episodes with their
	// acknowledgement and current silence, ordered by key. Concurrent calls open one episode
	// per alarm.
	SyncAlerts(ctx context.Context, active []bt.Alert) ([]bt.Alert, error)
	// AckAlert records actor's acknowledgement of the open episode of the alarm key; an episode
	// acknowledged already keeps its first acknowledgement. ErrNotFound: no open episode.
	AckAlert(ctx context.Context, key, actor string) (*bt.Alert, error)
	// SilenceAlert hides the alarm key until d from now by the database clock, replacing any
	// silence it had; d <= 0 lifts the silence. ErrNotFound: the alarm has no open episode.
	SilenceAlert(ctx context.Context, key string, d time.Duration, actor, reason string) (*bt.Alert, error)
	// AlertHistory lists alarm episodes, newest first.
	AlertHistory(ctx context.Context, f bt.AlertHistoryFilter) ([]bt.Alert, error)
}
