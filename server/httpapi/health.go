package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Check is one dependency that readiness requires: Ping must succeed for the instance to
// take traffic.
type Check struct {
	// Name labels the dependency in the 503 answer ("postgres: unreachable").
	Name string
	// Ping reports whether the dependency answers.
	Ping func(ctx context.Context) error
}

// readyTimeout bounds the checks of one readiness probe, so that a stalled dependency
// answers 503 rather than holding the probe until its caller gives up.
const readyTimeout = 2 * time.Second

// Live answers GET /healthz: 200 "ok" while the process serves HTTP at all.
func Live() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})
}

// Ready answers GET /readyz: 503 "draining" once draining reports true (shutdown has begun,
// so load balancers stop sending work), 503 "<name>: unreachable" when a check fails, and
// 200 "ready" otherwise.
func Ready(draining func() bool, checks ...Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if draining() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(req.Context(), readyTimeout)
		defer cancel()
		for _, c := range checks {
			if err := c.Ping(ctx); err != nil {
				http.Error(w, c.Name+": unreachable", http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
}
