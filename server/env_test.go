package server

import (
	"strings"
	"testing"
)

// LoadEnv sets what the variables say, the current BATON_ names winning over the old ones,
// keeps the program's own values for the rest, and refuses a bad value by name, changing
// nothing.
func TestLoadEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BATON_ADDR": ":9999", "DATABASE_URL": "postgres://old/db",
		"BATON_DATABASE_URL": "postgres://new/db", "REDIS_URL": "redis://old:6379/0", "BATON_ENV": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c := DefaultConfig()
	c.Env, c.PoolSize = "example", 2
	if err := c.LoadEnv(lookup); err != nil {
		t.Fatal(err)
	}
	if c.Addr != ":9999" || c.DatabaseURL != "postgres://new/db" || c.RedisURL != "redis://old:6379/0" || c.Env != "example" || c.PoolSize != 2 {
		t.Fatalf("LoadEnv gave addr %q, database %q, redis %q, env %q, pool %d", c.Addr, c.DatabaseURL, c.RedisURL, c.Env, c.PoolSize)
	}
	env["BATON_POOL_SIZE"] = "many"
	env["BATON_ADDR"] = ":1"
	err := c.LoadEnv(lookup)
	if err == nil || !strings.Contains(err.Error(), "BATON_POOL_SIZE") {
		t.Fatalf("LoadEnv with a bad pool size: %v, want an error naming BATON_POOL_SIZE", err)
	}
	if c.Addr != ":9999" || c.PoolSize != 2 {
		t.Fatalf("a refused LoadEnv changed the config: addr %q, pool %d", c.Addr, c.PoolSize)
	}
}
