package limiter

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Turn markers: the evidence a turn leaves of whether it was granted, for a caller that
// writes its intent before it waits for its turn and may die while it waits.
//
// Acquire with an Intent keeps one key per intent, written by acquireScript in the step
// that decides: "g" once the turn is granted with no wait, before the caller can call;
// "r<note>" once it is granted with a wait (a rate turn ahead, a pushback's block), until
// takeTurn, after the wait and before the call, turns it into "g"; "w<note>" while it waits
// for a slot, once Redis has answered it before. Revoke turns a "w" or "r" into "x" in one
// step, and a revoked intent is never granted or given its turn: either the grant (or the
// take) came first and Revoke sees "g", or Revoke came first and the call is never made. A
// caller whose intent Redis may hold as "w" or "r" (answered before, granted with a wait, or
// asked by a script whose answer was lost other than by a refused connection) takes no turn
// from the local share for it while the marker may live (turnMarks); the last two end with
// ErrTurnLeft, for a retry under a new intent. No marker, or "g", says nothing: the call may
// have been made.

// Intent names the call a turn is for. ID is unique per call; Note is kept with a waiting
// marker and returned by Revoke.
type Intent struct {
	ID   string
	Note string
}

// markTTL is how long a marker lives: well past the call's lease, which bounds its wait and
// after which the recoverer looks.
func markTTL(lease time.Duration) time.Duration {
	return 2*max(lease, 0) + time.Minute
}

// turnMarks are the intents of this instance whose markers Redis may hold as waiting ("w",
// or "r" for the wait of a granted turn), each until when (on this instance's clock).
type turnMarks struct {
	mu    sync.Mutex
	until map[string]time.Time
}

// waiting records that Redis may mark intent id waiting, for about ttl from now (counted
// twice over, so that it outlives the marker).
func (m *turnMarks) waiting(id string, ttl time.Duration, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.until == nil {
		m.until = map[string]time.Time{}
	}
	for k, until := range m.until {
		if now.After(until) {
			delete(m.until, k)
		}
	}
	m.until[id] = now.Add(2 * ttl)
}

// has reports whether Redis may hold intent id as waiting for its turn.
func (m *turnMarks) has(id string, now time.Time) bool {
	if id == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.until[id]
	return ok && now.Before(until)
}

// revokeScript revokes the intents whose markers say they wait for a turn or for the wait of
// a granted one (or were revoked before). KEYS: the markers. ARGV: the tombstone's TTL (ms). Reply: per key, "=" and the
// note of a revoked intent, or "" (granted, or nothing known).
var revokeScript = redis.NewScript(`
local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.call('GET', k) or ''
  local c = string.sub(v, 1, 1)
  if c == 'w' or c == 'r' or c == 'x' then
    redis.call('SET', k, 'x' .. string.sub(v, 2), 'PX', ARGV[1])
    out[i] = '=' .. string.sub(v, 2)
  else
    out[i] = ''
  end
end
return out
`)

// Revoke settles the intents ids whose calls were never made: for each one Redis holds as
// waiting for its turn, it makes sure no turn is granted to it, ever, and returns its note.
// An intent not returned may have been called. An error says nothing of any of them.
func Revoke(ctx context.Context, l *Limiter, ids []string, ttl time.Duration) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = l.ks.turn(id)
	}
	ctx, cancel := context.WithTimeout(ctx, max(l.cfg.Timeout, time.Second))
	defer cancel()
	reply, err := revokeScript.Run(ctx, l.cfg.Redis, keys, ttl.Milliseconds()).StringSlice()
	if err != nil {
		return nil, err
	}
	for i, v := range reply {
		if i < len(ids) && len(v) > 0 && v[0] == '=' {
			out[ids[i]] = v[1:]
		}
	}
	return out, nil
}

// takeScript takes a turn granted with a wait: "r" becomes "g". KEYS: the marker. ARGV: its
// TTL (ms). Reply 1 taken (or taken before), 0 revoked or gone: no call.
var takeScript = redis.NewScript(`
local c = string.sub(redis.call('GET', KEYS[1]) or '', 1, 1)
if c == 'g' then return {1} end
if c ~= 'r' then return {0} end
redis.call('SET', KEYS[1], 'g', 'PX', ARGV[1])
return {1}
`)

// takeTurn takes intent's turn at name once the wait it was granted with is over, before the
// call. An error wraps ErrNoTurn: revoked, or Redis not reached (then ErrTurnLeft too: the
// turn may be revoked still).
func takeTurn(ctx context.Context, l *Limiter, name string, in Intent, ttl time.Duration) error {
	if l.cfg.Waited != nil {
		l.cfg.Waited(in.ID)
	}
	reply, err := l.run(ctx, func(ctx context.Context) ([]int64, error) {
		return takeScript.Run(ctx, l.cfg.Redis, []string{l.ks.turn(in.ID)}, ttl.Milliseconds()).Int64Slice()
	})
	if err != nil {
		return fmt.Errorf("downstream %q: its turn could not be taken: %w, %w (%v)", name, ErrNoTurn, ErrTurnLeft, err)
	}
	if reply[0] != 1 {
		return fmt.Errorf("downstream %q: the recoverer settled this call as not made: %w", name, ErrNoTurn)
	}
	return nil
}
