// Package redislock is Baton's ShedLock-style job lock on Redis: one key per job,
// "baton:{<env>}:lock:<name>", holding the token of the run that owns it, with a TTL that the
// holder extends while it makes progress.
//
// The lock is the fast path of the one-active-run-per-job invariant; the database's partial
// unique index is the backstop, so a lost key (failover, eviction) never lets two runs of a
// job be active. Expiry is judged by Redis' own clock (the key's TTL), never by the caller's.
//
// Extend and Release compare the stored token before they touch the key, in one Lua script,
// so a holder whose lock expired and was taken by someone else can neither prolong nor
// delete the new holder's lock. The scripts touch only the key passed in KEYS.
//
// Every Redis key and channel of one environment starts with Namespace(env): the braces
// make the environment name the key's hash tag, so in Redis Cluster all of them live in
// one hash slot, on one master.
package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// extendScript sets a new TTL only if the key still holds the caller's token.
var extendScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
`)

// releaseScript deletes the key only if it still holds the caller's token.
var releaseScript = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
`)

// Locker takes, extends and releases named locks in one environment. It is safe for
// concurrent use.
type Locker struct {
	client redis.UniversalClient
	prefix string
}

// Namespace returns the prefix of every Redis key and channel of env: "baton:{<env>}:",
// whose hash tag puts them all in one Cluster hash slot.
func Namespace(env string) string { return "baton:{" + env + "}:" }

// New returns a Locker whose keys are "baton:{<env>}:lock:<name>".
func New(client redis.UniversalClient, env string) *Locker {
	return &Locker{client: client, prefix: Namespace(env) + "lock:"}
}

// Key returns the Redis key of the lock called name.
func (l *Locker) Key(name string) string { return l.prefix + name }

// Acquire takes the lock called name for token, for ttl, with SET key token NX PX ttl.
// It reports false, with a nil error, when the lock is held (by anyone, token included:
// Acquire is not reentrant; use Extend to keep a lock you hold).
func (l *Locker) Acquire(ctx context.Context, name, token string, ttl time.Duration) (ok bool, err error) {
	ms, err := checkArgs(name, token, ttl)
	if err != nil {
		return false, err
	}
	// Spelled out rather than SetNX, which switches to EX for whole seconds: the lock is
	// specified in milliseconds everywhere.
	cmd := redis.NewBoolCmd(ctx, "set", l.Key(name), token, "nx", "px", ms)
	if err := l.client.Process(ctx, cmd); err != nil {
		return false, fmt.Errorf("acquire lock %q: %w", name, err)
	}
	return cmd.Val(), nil
}

// Extend sets the TTL of the lock called name to ttl from now, if token holds it. It reports
// false when the key is missing (expired or released) or holds another token; the caller has
// then lost the lock and must stop.
func (l *Locker) Extend(ctx context.Context, name, token string, ttl time.Duration) (ok bool, err error) {
	ms, err := checkArgs(name, token, ttl)
	if err != nil {
		return false, err
	}
	n, err := extendScript.Run(ctx, l.client, []string{l.Key(name)}, token, ms).Int64()
	if err != nil {
		return false, fmt.Errorf("extend lock %q: %w", name, err)
	}
	return n == 1, nil
}

// Release deletes the lock called name if token holds it. It reports false when the lock was
// not held by token (already expired, released, or taken by someone else), in which case
// nothing is changed.
func (l *Locker) Release(ctx context.Context, name, token string) (ok bool, err error) {
	if _, err := checkArgs(name, token, time.Millisecond); err != nil {
		return false, err
	}
	n, err := releaseScript.Run(ctx, l.client, []string{l.Key(name)}, token).Int64()
	if err != nil {
		return false, fmt.Errorf("release lock %q: %w", name, err)
	}
	return n == 1, nil
}

// Holder returns the token that holds the lock called name, and false if nobody does. It is
// for diagnostics and tests: the answer may be stale by the time the caller reads it.
func (l *Locker) Holder(ctx context.Context, name string) (token string, ok bool, err error) {
	token, err = l.client.Get(ctx, l.Key(name)).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read lock %q: %w", name, err)
	}
	return token, true, nil
}

// checkArgs rejects arguments that would make a lock nobody can identify or one that never
// expires, and returns ttl in milliseconds.
func checkArgs(name, token string, ttl time.Duration) (int64, error) {
	switch {
	case name == "":
		return 0, errors.New("redislock: empty lock name")
	case token == "":
		return 0, errors.New("redislock: empty token")
	case ttl < time.Millisecond:
		return 0, fmt.Errorf("redislock: ttl %s is below 1ms", ttl)
	}
	return ttl.Milliseconds(), nil
}
