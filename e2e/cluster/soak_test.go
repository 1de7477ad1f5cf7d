//go:build unix && soak

package cluster

import (
	"testing"
	"time"
)

// The soak forms (`make soak`: go test -tags soak -run Soak ./e2e/...): the scenarios of
// scenarios_test.go with longer runs, several faults per scenario, longer outages (PostgreSQL
// crashed rather than stopped), 50 storm jobs for 2 minutes and 1,000 concurrent starts.
var soak = sizes{
	name: "soak", pages: 6000, accounts: 3000, pageLatency: 20 * time.Millisecond, providerLatency: 20 * time.Millisecond,
	rounds: 5, outage: 8 * time.Second, crashPostgres: true, stormJobs: 50, stormFor: 2 * time.Minute, burst: 1000,
	// A stalled Redis at the default 30s lease: each renewal waits ~5s for the Redis client.
	redisPartition: Blackhole, redisPartitionLease: 30 * time.Second,
}

func TestSoakKillHolder(t *testing.T)          { scenarioKillHolder(t, soak) }
func TestSoakPausedHolder(t *testing.T)        { scenarioPausedHolder(t, soak) }
func TestSoakRedisFlushRestart(t *testing.T)   { scenarioRedisFlushRestart(t, soak) }
func TestSoakPostgresRestart(t *testing.T)     { scenarioPostgresRestart(t, soak) }
func TestSoakPartitionRedis(t *testing.T)      { scenarioPartitionRedis(t, soak) }
func TestSoakPartitionPostgres(t *testing.T)   { scenarioPartitionPostgres(t, soak) }
func TestSoakRollingRestartStorm(t *testing.T) { scenarioRollingRestartStorm(t, soak) }
func TestSoakConcurrentStart(t *testing.T)     { scenarioConcurrentStart(t, soak) }
