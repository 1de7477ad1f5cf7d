package server

import (
	"context"
	"errors"
	"testing"

	"github.com/baton-run/baton/internal/redisconn"
	bt "github.com/baton-run/baton/runner/batontype"
)

// TestServeRefusesABadRedisURL: a Redis URL or CA file that cannot work stops Serve before it
// touches the database, with a coded error that names the setting.
func TestServeRefusesABadRedisURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ url, ca, field string }{
		{"redis+sentinel://127.0.0.1:26379", "", redisconn.FieldURL},
		{"redis://127.0.0.1:6379/0", "/nonexistent/ca.pem", redisconn.FieldCAFile},
	} {
		c := DefaultConfig()
		c.DatabaseURL = "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
		c.RedisURL, c.RedisCAFile = tc.url, tc.ca
		err := Serve(context.Background(), c)
		var be *bt.Error
		if !errors.As(err, &be) || be.Code != bt.CodeInvalidInput || be.Field != tc.field {
			t.Errorf("Serve with Redis URL %q and CA file %q = %v; want INVALID_INPUT on %s", tc.url, tc.ca, err, tc.field)
		}
	}
}
