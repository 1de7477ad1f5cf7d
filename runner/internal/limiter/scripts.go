package limiter

import "github.com/redis/go-redis/v9"

// The keys of one downstream, after Config.Prefix and its name.
const (
	keySlots = ":slots" // sorted set: slot holder → expiry (µs, Redis clock)
	keyTAT   = ":tat"   // string: the GCRA theoretical arrival time (µs)
	keyAdapt = ":adapt" // hash: f (rate fraction after the last decrease), d (its time), b (blocked until), n and nw (pushbacks in the window from nw)
	keyQuota = ":quota" // hash: w (window start, µs), n (calls counted in it)
	keyStats = ":st"    // base of the per-second buckets ":st:<unix second>" (hash c t e w ws)
	keyTurn  = "~turn:" // before an intent's id: its turn marker (turns.go); no downstream name holds '~'
)

// keyspace is the key prefix of every downstream.
type keyspace string

func (k keyspace) key(name, kind string) string { return string(k) + name + kind }

// turn is the key of the turn marker of intent id.
func (k keyspace) turn(id string) string { return string(k) + keyTurn + id }

// all returns the keys of name in the order the scripts take them.
func (k keyspace) all(name string) []string {
	return []string{k.key(name, keySlots), k.key(name, keyTAT), k.key(name, keyAdapt),
		k.key(name, keyQuota), k.key(name, keyStats)}
}

// luaCommon: the Redis clock in µs and the effective rate fraction (see fraction in adapt.go).
const luaCommon = `
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fraction(f0, d, now, recovery, minf)
  if not f0 or not d or f0 >= 1 or recovery <= 0 then return 1 end
  local el = now - d
  if el >= recovery then return 1 end
  if el < 0 then el = 0 end
  local x = el / recovery
  local f = f0 + (1 - f0) * x * x
  if f < minf then f = minf end
  return f
end
-- tolerance: see tolerance in adapt.go.
local function tolerance(burst, T)
  if burst <= 1 then return 0 end
  local margin = T / 4
  if margin > 5000 then margin = 5000 end
  return (burst - 1) * T - margin
end
local function us(x) return string.format('%.0f', x) end
local function extend(key, ttl_ms)
  ttl_ms = math.ceil(ttl_ms)
  if redis.call('PTTL', key) < ttl_ms then redis.call('PEXPIRE', key, ttl_ms) end
end
`

// acquireScript takes a slot, the rate turn and the quota count in one step, or nothing.
// KEYS: slots, tat, adapt, quota. ARGV: member, concurrency, rate, burst, quota, window (µs),
// max wait (µs), lease (µs), min fraction, recovery (µs), the caller's calls in flight on
// slots Redis does not know (taken from the local share while degraded); with KEYS[5], the
// intent's turn marker (turns.go): ARGV 12 (1: mark the intent waiting when no slot is free),
// its note, and the marker's TTL (ms); a grant marks it "g", or "r" when it comes with a wait.
// Reply {0, wait µs, now µs, quota window counted} | {1, quota window end µs, µs until it} | {2} no slot |
// {3, wait µs} turn past the max wait | {4} the intent was revoked: no turn, ever.
var acquireScript = redis.NewScript(luaCommon + `
local now = clock()
local marker = KEYS[5]
if marker and string.sub(redis.call('GET', marker) or '', 1, 1) == 'x' then return {4} end
local conc, rate, burst = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local quota, win, maxwait = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local q
if quota > 0 then
  q = redis.call('HMGET', KEYS[4], 'w', 'n')
  -- The counted window may be the next one already, when a turn's wait crossed into it.
  local w = tonumber(q[1]) or 0
  if w >= math.floor(now / win) * win and (tonumber(q[2]) or 0) >= quota then return {1, w + win, w + win - now} end
end
if conc > 0 then
  local held = redis.call('ZCARD', KEYS[1]) + tonumber(ARGV[11])
  if held >= conc then
    -- Full: only now drop the holders past their expiry (dead instances, dropped permits).
    held = held - redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
    if held >= conc then
      if marker and ARGV[12] == '1' then redis.call('SET', marker, 'w' .. ARGV[13], 'PX', ARGV[14]) end
      return {2}
    end
  end
end
local a = redis.call('HMGET', KEYS[3], 'f', 'd', 'b')
local blocked = tonumber(a[3]) or 0
local wait, tat2 = 0, nil
if rate > 0 then
  local eff = rate * fraction(tonumber(a[1]), tonumber(a[2]), now, tonumber(ARGV[10]), tonumber(ARGV[9]))
  local T = 1000000 / eff
  local tau = tolerance(burst, T)
  local tat = tonumber(redis.call('GET', KEYS[2])) or now
  if tat < now then tat = now end
  if blocked > now and tat < blocked + tau then tat = blocked + tau end
  wait = tat - tau - now
  if wait > maxwait then return {3, math.floor(wait)} end
  tat2 = tat + T
elseif blocked > now then
  wait = blocked - now
  if wait > maxwait then return {3, math.floor(wait)} end
end
if wait < 0 then wait = 0 end
wait = math.floor(wait)
if marker then
  -- A turn granted with a wait is not taken until the wait is over (takeTurn).
  if wait > 0 then redis.call('SET', marker, 'r' .. ARGV[13], 'PX', ARGV[14])
  else redis.call('SET', marker, 'g', 'PX', ARGV[14]) end
end
if tat2 then redis.call('SET', KEYS[2], us(tat2), 'PX', math.ceil((tat2 - now) / 1000) + 2000) end
if conc > 0 then
  local lease = tonumber(ARGV[8])
  redis.call('ZADD', KEYS[1], us(now + lease), ARGV[1])
  extend(KEYS[1], lease / 1000 + 1000)
end
local counted = 0
if quota > 0 then
  counted = math.floor((now + wait) / win) * win
  local w = tonumber(q[1])
  if not w or w < counted then
    redis.call('HSET', KEYS[4], 'w', us(counted), 'n', 1)
  else
    counted = w
    redis.call('HINCRBY', KEYS[4], 'n', 1)
  end
  redis.call('PEXPIREAT', KEYS[4], us((counted + win) / 1000 + 60000))
end
return {0, wait, now, counted}
`)

// undoScript gives back what acquireScript took for a call that did not start: the slot and
// the quota count (the rate turn passes unused). KEYS: slots, quota. ARGV: member, window counted.
var undoScript = redis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[2] ~= '0' and redis.call('HGET', KEYS[2], 'w') == ARGV[2] then
  redis.call('HINCRBY', KEYS[2], 'n', -1)
end
return 1
`)

// pushbackScript lowers the rate fraction (at most once per cooldown) and blocks calls until
// now + retry. KEYS: adapt. ARGV: rate, decrease, cooldown µs, min fraction, recovery µs,
// retry µs. Reply {decreased 0|1, fraction × 1e6, blocked until µs}.
var pushbackScript = redis.NewScript(luaCommon + `
local now = clock()
local rate, dec, cool = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local minf, rec, retry = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local need = tonumber(ARGV[7])
local a = redis.call('HMGET', KEYS[1], 'f', 'd', 'b', 'n', 'nw')
local f0, d, b = tonumber(a[1]), tonumber(a[2]), tonumber(a[3]) or 0
-- Pushbacks without a Retry-After count in a window of one cooldown: only need of them in
-- one window are taken as "too fast", so a provider's sporadic 503s do not slow anyone.
local n, nw = tonumber(a[4]) or 0, tonumber(a[5]) or 0
if now - nw >= cool then n, nw = 0, now end
n = n + 1
redis.call('HSET', KEYS[1], 'n', n, 'nw', us(nw))
local f = fraction(f0, d, now, rec, minf)
local decreased = 0
if rate > 0 and (not d or now - d >= cool) and (retry > 0 or n >= need) then
  f = f * dec
  if f < minf then f = minf end
  d = now
  redis.call('HSET', KEYS[1], 'f', tostring(f), 'd', us(d))
  decreased = 1
end
if retry > 0 and now + retry > b then
  b = now + retry
  redis.call('HSET', KEYS[1], 'b', us(b))
end
local until_ = b
if d and d + rec > until_ then until_ = d + rec end
if until_ > now then extend(KEYS[1], (until_ - now) / 1000 + 1000) end
return {decreased, math.floor(f * 1000000), math.floor(b)}
`)

// flushScript adds one instance's counts to the current second's bucket.
// KEYS: stats base. ARGV: calls, throttled, errors, waits, wait µs.
var flushScript = redis.NewScript(`
local t = redis.call('TIME')
local k = KEYS[1] .. ':' .. t[1]
local fields = {'c', 't', 'e', 'w', 'ws'}
for i, f in ipairs(fields) do
  if ARGV[i] ~= '0' then redis.call('HINCRBY', k, f, ARGV[i]) end
end
redis.call('EXPIRE', k, 75)
return 1
`)

// stateScript reads a downstream's figures. KEYS: slots, tat, adapt, quota, stats base.
// ARGV: min fraction, recovery µs, quota window µs (0 = none).
// Reply {now µs, in flight, fraction × 1e6, blocked until µs, quota used,
// calls 10 s, calls 60 s, throttled, errors, waits, wait µs}.
var stateScript = redis.NewScript(luaCommon + `
local now = clock()
local inflight = redis.call('ZCOUNT', KEYS[1], '(' .. us(now), '+inf')
local a = redis.call('HMGET', KEYS[3], 'f', 'd', 'b')
local f = fraction(tonumber(a[1]), tonumber(a[2]), now, tonumber(ARGV[2]), tonumber(ARGV[1]))
local b = tonumber(a[3]) or 0
if b <= now then b = 0 end
local used, win = 0, tonumber(ARGV[3])
if win > 0 then
  local q = redis.call('HMGET', KEYS[4], 'w', 'n')
  if tonumber(q[1]) == math.floor(now / win) * win then used = tonumber(q[2]) or 0 end
end
local sec = math.floor(now / 1000000)
local c10, c, t, e, w, ws = 0, 0, 0, 0, 0, 0
for s = sec - 59, sec do
  local v = redis.call('HMGET', KEYS[5] .. ':' .. s, 'c', 't', 'e', 'w', 'ws')
  local n = tonumber(v[1]) or 0
  c = c + n
  if s > sec - 10 then c10 = c10 + n end
  t = t + (tonumber(v[2]) or 0)
  e = e + (tonumber(v[3]) or 0)
  w = w + (tonumber(v[4]) or 0)
  ws = ws + (tonumber(v[5]) or 0)
end
return {now, inflight, math.floor(f * 1000000), b, used, c10, c, t, e, w, ws}
`)
