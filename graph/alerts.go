package graph

import (
	"context"

	bt "github.com/baton-run/baton/runner/batontype"
)

// cursorAlertHistory is the cursor kind of the alarm history.
const cursorAlertHistory = "alert-history"

// typeAlertEpisode is the global id type of an alarm episode.
const typeAlertEpisode = "AlertEpisode"

// announcedAlerts are the alarms the live stream may announce: the active ones no silence
// hides.
func announcedAlerts(alerts func(context.Context) ([]bt.Alert, error)) func(context.Context) ([]bt.Alert, error) {
	return func(ctx context.Context) ([]bt.Alert, error) {
		all, err := alerts(ctx)
		if err != nil {
			return nil, err
		}
		out := all[:0:0]
		for _, a := range all {
			if !a.Silenced() {
				out = append(out, a)
			}
		}
		return out, nil
	}
}

// strOrNil returns nil for "".
func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
