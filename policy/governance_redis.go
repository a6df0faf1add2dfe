package policy

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/harness-runtime/harness/action"
)

// DefaultGovernancePrefix starts every Redis key RedisCounters writes.
const DefaultGovernancePrefix = "harness:gov:"

// RedisCounters is a CounterStore in Redis, shared by every replica that
// points at the same database: one budget per session across all of them.
//
// A session's counters are one Redis hash under prefix+"session:"+key
// (SessionKey.String), expiring IdleTTL after its last action; a tenant's
// rate bucket is a hash under prefix+"tenant:"+tenant. Admit and Settle are
// each one Lua script, which Redis runs atomically: no read-modify-write
// race between replicas, so of any number of concurrent actions exactly
// max-actions are admitted. The scripts read Redis's clock (TIME), so the
// replicas' own clocks do not matter; they need Redis 5 or later, and both
// keys of a script on one node (no Redis Cluster).
type RedisCounters struct {
	client *redis.Client
	prefix string
	own    bool
}

// NewRedisCounters returns a store on client under prefix (empty:
// DefaultGovernancePrefix). The caller closes client.
func NewRedisCounters(client *redis.Client, prefix string) *RedisCounters {
	if prefix == "" {
		prefix = DefaultGovernancePrefix
	}
	return &RedisCounters{client: client, prefix: prefix}
}

// OpenRedisCounters connects to the Redis named by url
// (redis://host:port/db, as harness.trusted.store) and checks that it
// answers. Close closes the connection.
func OpenRedisCounters(ctx context.Context, url string) (*RedisCounters, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("governance store: %w", err)
	}
	c := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("governance store: redis ping: %w", err)
	}
	s := NewRedisCounters(c, "")
	s.own = true
	return s, nil
}

func (s *RedisCounters) sessionKey(k SessionKey) string { return s.prefix + "session:" + k.String() }
func (s *RedisCounters) tenantKey(t string) string      { return s.prefix + "tenant:" + t }

// fields are the session hash's counters in the order the scripts return
// them (after code, limit and retry for admitScript).
const counterFields = `'a', 'r', 'e', 'ce', 'f', 'cf', 't0', 'bw', 'cm', 'rn', 'fn', 'br'`

// admitScript is memSession.admit in Lua. KEYS: the session, the tenant's
// bucket. ARGV: count, hash, weight, changes, max-actions, max-risk,
// max-errors, max-consecutive-errors, max-wall (µs), max-bytes-written,
// repeat-failing, repeat-identical, session rate, tenant rate, idle TTL
// (ms). Returns {code (0 none, 1 budget, 2 repeat, 3 rate), limit, retry
// (ms), the counters, now (µs)}.
var admitScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local v = redis.call('HMGET', KEYS[1], ` + counterFields + `, 'lh', 'fh', 'bt', 'bts')
local function n(x) return tonumber(x) or 0 end
local a, r, e, ce, f, cf, t0, bw, cm, rn, fn, br = n(v[1]), n(v[2]), n(v[3]), n(v[4]), n(v[5]), n(v[6]), n(v[7]), n(v[8]), n(v[9]), n(v[10]), n(v[11]), n(v[12])
local lh, fh = v[13] or '', v[14] or ''
local count, hash, w, changes = ARGV[1] == '1', ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'
local maxA, maxR, maxE, maxCE = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local maxW, maxB, rf, ri = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
local srate, trate, ttl = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local code, limit, retry = 0, '', 0
if maxA > 0 and a >= maxA then code, limit = 1, 'max-actions'
elseif maxR > 0 and r + w > maxR then code, limit = 1, 'max-risk'
elseif maxE > 0 and e >= maxE then code, limit = 1, 'max-errors'
elseif maxCE > 0 and ce >= maxCE then code, limit = 1, 'max-consecutive-errors'
elseif maxW > 0 and t0 > 0 and now - t0 >= maxW then code, limit = 1, 'max-wall-seconds'
elseif maxB > 0 and bw >= maxB then code, limit = 1, 'max-bytes-written'
elseif rf > 0 and fn >= rf and fh == hash then code, limit = 2, 'repeat-failing'
elseif ri > 0 and changes and rn >= ri and lh == hash then code, limit = 2, 'repeat-identical'
end
local function refill(tok, at, rate)
  local burst = math.max(1, rate)
  if not at then return burst end
  return math.min(burst, tonumber(tok) + (now - tonumber(at)) * rate / 1e6)
end
local st, tt
if code == 0 and srate > 0 then
  st = refill(v[15], v[16], srate)
  if st < 1 then code, limit, retry = 3, 'rate.session-per-second', math.ceil((1 - st) * 1000 / srate) end
end
if code == 0 and trate > 0 then
  local b = redis.call('HMGET', KEYS[2], 'bt', 'bts')
  tt = refill(b[1], b[2], trate)
  if tt < 1 then code, limit, retry = 3, 'rate.tenant-per-second', math.ceil((1 - tt) * 1000 / trate) end
end
if code == 0 and count then
  a, r = a + 1, r + w
  if t0 == 0 then t0 = now end
  if st then st = st - 1 end
  if tt then tt = tt - 1 end
  redis.call('HSET', KEYS[1], 'a', a, 'r', r, 't0', t0)
end
if st then redis.call('HSET', KEYS[1], 'bt', st, 'bts', now) end
if tt then
  redis.call('HSET', KEYS[2], 'bt', tt, 'bts', now)
  redis.call('PEXPIRE', KEYS[2], math.ceil(math.max(1, trate) / trate * 1000) + 1000)
end
redis.call('PEXPIRE', KEYS[1], ttl)
return {code, limit, retry, a, r, e, ce, f, cf, t0, bw, cm, rn, fn, br, now}
`)

// settleScript is memSession.settle in Lua. KEYS: the session. ARGV:
// counted, ran, weight, refused, failed, changes, hashed, hash, result,
// bytes written, command ms, idle TTL (ms), bytes read. Returns {the
// counters, now}.
var settleScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local v = redis.call('HMGET', KEYS[1], ` + counterFields + `, 'lh', 'fh', 'fs')
local function n(x) return tonumber(x) or 0 end
local a, r, e, ce, f, cf, t0, bw, cm, rn, fn, br = n(v[1]), n(v[2]), n(v[3]), n(v[4]), n(v[5]), n(v[6]), n(v[7]), n(v[8]), n(v[9]), n(v[10]), n(v[11]), n(v[12])
local lh, fh, fs = v[13] or '', v[14] or '', v[15] or ''
local counted, ran, w = ARGV[1] == '1', ARGV[2] == '1', tonumber(ARGV[3])
local refused, failed, changes, hashed = ARGV[4] == '1', ARGV[5] == '1', ARGV[6] == '1', ARGV[7] == '1'
local hash, res = ARGV[8], ARGV[9]
if counted and not ran then a, r = math.max(a - 1, 0), math.max(r - w, 0) end
if refused then f, cf = f + 1, cf + 1
elseif failed then e, ce = e + 1, ce + 1
elseif ran then ce, cf = 0, 0 end
if ran then
  bw, cm, br = bw + tonumber(ARGV[10]), cm + tonumber(ARGV[11]), br + tonumber(ARGV[13])
  if hashed then
    if changes then
      if rn > 0 and lh == hash then rn = rn + 1 else lh, rn = hash, 1 end
    end
    if failed or refused then
      if fn > 0 and fh == hash and fs == res then fn = fn + 1 else fh, fs, fn = hash, res, 1 end
    elseif fh == hash then fn = 0 end
  end
end
redis.call('HSET', KEYS[1], 'a', a, 'r', r, 'e', e, 'ce', ce, 'f', f, 'cf', cf, 'bw', bw, 'cm', cm, 'rn', rn, 'fn', fn, 'br', br, 'lh', lh, 'fh', fh, 'fs', fs)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[12]))
return {a, r, e, ce, f, cf, t0, bw, cm, rn, fn, br, now}
`)

var getScript = redis.NewScript(`
local t = redis.call('TIME')
local v = redis.call('HMGET', KEYS[1], ` + counterFields + `)
local out = {}
for i = 1, #v do out[i] = tonumber(v[i]) or 0 end
out[#v + 1] = tonumber(t[1]) * 1000000 + tonumber(t[2])
return out
`)

// settleTimeout bounds counting an outcome whose caller went away.
const settleTimeout = 5 * time.Second

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func ttlMS(d time.Duration) int64 {
	if d <= 0 {
		d = DefaultIdleTTL
	}
	return max(d.Milliseconds(), 1)
}

// Admit implements CounterStore.
func (s *RedisCounters) Admit(ctx context.Context, key SessionKey, args AdmitArgs) (Verdict, Counters, error) {
	l := args.Limits
	hash, _ := args.Hash.Sum() // a script cannot ask for it when it needs it
	res, err := admitScript.Run(ctx, s.client, []string{s.sessionKey(key), s.tenantKey(key.Tenant)},
		flag(args.Count), hex.EncodeToString(hash[:]), args.Weight, flag(args.Changes),
		l.MaxActions, l.MaxRisk, l.MaxErrors, l.MaxConsecutiveErrors, l.MaxWall.Microseconds(), l.MaxBytesWritten,
		l.RepeatFailing, l.RepeatIdentical,
		strconv.FormatFloat(l.SessionRate, 'g', -1, 64), strconv.FormatFloat(l.TenantRate, 'g', -1, 64),
		ttlMS(args.IdleTTL)).Slice()
	if err != nil {
		return Verdict{}, Counters{}, fmt.Errorf("governance store: %w", err)
	}
	if len(res) != 16 {
		return Verdict{}, Counters{}, fmt.Errorf("governance store: admit answered %d values", len(res))
	}
	var v Verdict
	code, _ := res[0].(int64)
	switch code {
	case 1:
		v.Code = action.CodeBudgetExhausted
	case 2:
		v.Code = action.CodeRepeatedAction
	case 3:
		v.Code = action.CodeRateLimited
	}
	v.Limit, _ = res[1].(string)
	retry, _ := res[2].(int64)
	v.RetryAfter = time.Duration(retry) * time.Millisecond
	c, err := counters(res[3:])
	return v, c, err
}

// counters reads {a, r, e, ce, f, cf, t0, bw, cm, rn, fn, br, now}.
func counters(vals []any) (Counters, error) {
	if len(vals) != 13 {
		return Counters{}, fmt.Errorf("governance store: %d counters", len(vals))
	}
	var n [13]int64
	for i, v := range vals {
		x, ok := v.(int64)
		if !ok {
			return Counters{}, fmt.Errorf("governance store: counter %d is %T", i, v)
		}
		n[i] = x
	}
	return Counters{
		Actions: n[0], Risk: n[1], Errors: n[2], ConsecutiveErrors: n[3], Refusals: n[4], ConsecutiveRefusals: n[5],
		Start: n[6], BytesWritten: n[7], CommandMS: n[8], Repeats: n[9], FailingRepeats: n[10], BytesRead: n[11], Now: n[12],
	}, nil
}

// Settle implements CounterStore.
func (s *RedisCounters) Settle(ctx context.Context, key SessionKey, o Settlement) (Counters, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	hash, hashed := o.Hash.Sum()
	res, err := settleScript.Run(ctx, s.client, []string{s.sessionKey(key)},
		flag(o.Counted), flag(o.Ran), o.Weight, flag(o.Refused), flag(o.Failed), flag(o.Changes), flag(hashed),
		hex.EncodeToString(hash[:]), hex.EncodeToString(o.Result[:]), o.BytesWritten, o.CommandMS, ttlMS(o.IdleTTL), o.BytesRead).Slice()
	if err != nil {
		return Counters{}, fmt.Errorf("governance store: %w", err)
	}
	return counters(res)
}

// Get implements CounterStore.
func (s *RedisCounters) Get(ctx context.Context, key SessionKey) (Counters, error) {
	res, err := getScript.Run(ctx, s.client, []string{s.sessionKey(key)}).Slice()
	if err != nil {
		return Counters{}, fmt.Errorf("governance store: %w", err)
	}
	return counters(res)
}

// Reset implements CounterStore.
func (s *RedisCounters) Reset(ctx context.Context, key SessionKey) error {
	if err := s.client.Del(ctx, s.sessionKey(key)).Err(); err != nil {
		return fmt.Errorf("governance store: %w", err)
	}
	return nil
}

// Ping checks that Redis answers.
func (s *RedisCounters) Ping(ctx context.Context) error { return s.client.Ping(ctx).Err() }

// Close closes the connection if OpenRedisCounters opened it.
func (s *RedisCounters) Close() error {
	if s.own {
		return s.client.Close()
	}
	return nil
}
