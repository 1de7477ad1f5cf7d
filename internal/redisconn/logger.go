package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/baton-run/baton/internal/logthrottle"
)

// SetLogger sends go-redis' own messages (a pool's dial failures, a PubSub reconnecting)
// to log, as warnings "redis client" with the message under "detail", instead of the plain
// lines go-redis writes to stderr, which would break a JSON log stream. A message that
// repeats (the same format: each dial failure of an outage) is logged the first time and
// then at most once a minute, with the count of those not logged. go-redis has one logger
// for the process: the last call wins.
func SetLogger(log *slog.Logger) {
	if log == nil {
		return
	}
	redis.SetLogger(slogLogger{log: log, warn: logthrottle.New(0, nil)})
}

type slogLogger struct {
	log  *slog.Logger
	warn *logthrottle.Limiter
}

func (l slogLogger) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	ok, n := l.warn.Allow(format)
	if !ok {
		return
	}
	l.log.WarnContext(ctx, "redis client", "detail", strings.TrimSpace(fmt.Sprintf(format, v...)), "repeats_not_logged", n)
}
