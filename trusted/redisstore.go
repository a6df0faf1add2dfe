package trusted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisPrefix is put before every token ID to form its Redis key.
const DefaultRedisPrefix = "harness:token:"

// RedisStore is a TokenStore in Redis, shared by every replica that points
// at the same database: a token previewed on one replica can be redeemed on
// any other, exactly once.
//
// Each record is a Redis hash (principal, tenant, record JSON, index
// member) under prefix+ID with an expiry at the record's ExpiresAt, so
// Redis itself drops expired tokens. Consume is one Lua script (compare
// principal and tenant, then delete and return), which Redis runs
// atomically: of any number of concurrent redeemers, across processes,
// exactly one gets the record.
//
// Each principal's live tokens are also indexed in a sorted set under
// prefix+"by-principal:"+principal (member "ID:size", score the expiry in
// milliseconds), which is how the TokenLimits caps hold across replicas:
// Put is one Lua script that drops the index's expired members (by Redis's
// clock, the one that expires the records), counts the rest and their
// bytes, and stores the record only if both caps still hold. Put's cost
// grows with the principal's live tokens, which the count cap bounds.
// The scripts use TIME, so they need Redis 5 or later (effects
// replication), and both keys of a script must live on one node (no
// Redis Cluster).
//
// The record (including the action's input) is stored in Redis in clear;
// the token is not, only its SHA-256. Protect the Redis instance as you
// would the workspace.
type RedisStore struct {
	client *redis.Client
	prefix string
	own    bool
	limits TokenLimits
}

// indexKey is the sorted set of principal's live tokens.
func (s *RedisStore) indexKey(principal string) string {
	return s.prefix + "by-principal:" + principal
}

// putScript stores a record unless its principal's caps forbid it.
// KEYS: the record, the principal's index. ARGV: principal, tenant, the
// record's JSON, its expiry (Unix ms), its size, the token cap and the byte
// cap (-1: none), the index member. It returns {status, live tokens, their
// bytes, the oldest live expiry (ms, 0 if none), Redis's now (ms)} with
// status 0 stored, 1 refused by a cap, 2 already expired (not stored).
var putScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(ARGV[4])
if exp <= now then return {2, 0, 0, 0, now} end
local old = redis.call('HGET', KEYS[1], 'n')
if old then redis.call('ZREM', KEYS[2], old) end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local live = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
local count, held, oldest = #live / 2, 0, 0
for i = 1, #live, 2 do
  local m = live[i]
  held = held + tonumber(string.sub(m, string.find(m, ':', 1, true) + 1))
  if oldest == 0 then oldest = tonumber(live[i + 1]) end
end
local size, maxT, maxB = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
if (maxB >= 0 and size > maxB) or (maxT >= 0 and count + 1 > maxT) or (maxB >= 0 and held + size > maxB) then
  return {1, count, held, oldest, now}
end
redis.call('HSET', KEYS[1], 'p', ARGV[1], 't', ARGV[2], 'r', ARGV[3], 'n', ARGV[8])
redis.call('PEXPIREAT', KEYS[1], exp)
redis.call('ZADD', KEYS[2], exp, ARGV[8])
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 or now + ttl < exp then redis.call('PEXPIREAT', KEYS[2], exp) end
return {0, count, held, oldest, now}
`)

// consumeScript returns the record and deletes the key (and its index
// member, KEYS[2] being the caller's index) only when principal (ARGV[1])
// and tenant (ARGV[2]) match; otherwise it returns nil and leaves the key
// alone.
var consumeScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'p', 't', 'r', 'n')
if not v[3] then return false end
if v[1] ~= ARGV[1] or v[2] ~= ARGV[2] then return false end
redis.call('DEL', KEYS[1])
if v[4] then redis.call('ZREM', KEYS[2], v[4]) end
return v[3]
`)

// NewRedisStore returns a store over an existing client. Close does not
// close the client. An empty prefix means DefaultRedisPrefix.
func NewRedisStore(client *redis.Client, prefix string) *RedisStore {
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	return &RedisStore{client: client, prefix: prefix}
}

// SetLimits sets the caps per principal (the defaults until it is called).
// Call it before the store is shared. Every replica should use the same
// limits: each enforces its own when it stores.
func (s *RedisStore) SetLimits(l TokenLimits) { s.limits = l }

// OpenRedisStore connects to the Redis named by url (redis://[user:pass@]
// host:port/db or rediss:// for TLS) and checks that it answers. Close
// closes the connection pool.
func OpenRedisStore(ctx context.Context, url string) (*RedisStore, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("trusted store: %w", err)
	}
	client := redis.NewClient(opts)
	s := NewRedisStore(client, "")
	s.own = true
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := s.Ping(pctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("trusted store %s: %w", redactURL(url), err)
	}
	return s, nil
}

// redactURL hides the password of a redis URL in messages.
func redactURL(url string) string {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return url
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = "…@" + rest[at+1:]
	}
	return scheme + "://" + rest
}

// Put stores rec under id with a Redis expiry at rec.ExpiresAt. A record
// that has already expired is not stored. A record that would take its
// principal past a cap of the store's TokenLimits is not stored either:
// Put returns an *action.Error with code rate_limited (too_large for a
// record larger than the byte cap by itself) that wraps a *LimitError and
// matches ErrTokenLimit. The check and the write are one script, so
// concurrent Puts on any number of replicas never pass a cap together.
func (s *RedisStore) Put(ctx context.Context, id string, rec Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("trusted store: encode record: %w", err)
	}
	if !time.Now().Before(rec.ExpiresAt) {
		return nil
	}
	size := int64(len(data))
	maxTokens, maxBytes := s.limits.caps()
	res, err := putScript.Run(ctx, s.client, []string{s.prefix + id, s.indexKey(rec.Principal)},
		rec.Principal, rec.Tenant, data, rec.ExpiresAt.UnixMilli(), size, maxTokens, maxBytes,
		id+":"+strconv.FormatInt(size, 10)).Int64Slice()
	if err != nil {
		return fmt.Errorf("trusted store: put: %w", err)
	}
	if len(res) != 5 {
		return fmt.Errorf("trusted store: put: unexpected reply %v", res)
	}
	if res[0] != 1 {
		return nil
	}
	le := overCap(rec.Principal, res[1], res[2], size, maxTokens, maxBytes)
	if le == nil { // cannot happen: the script applies the same rule
		le = &LimitError{Principal: rec.Principal, Kind: LimitTokens, Max: maxTokens, Held: res[1], Size: size}
	}
	if res[3] > 0 && (le.Kind == LimitTokens || le.Size <= le.Max) {
		le.RetryAfter = time.Duration(res[3]-res[4]) * time.Millisecond
	}
	return limitError(le)
}

// Consume atomically removes and returns the record under id if it belongs
// to principal and tenant.
func (s *RedisStore) Consume(ctx context.Context, id, principal, tenant string) (Record, error) {
	raw, err := consumeScript.Run(ctx, s.client, []string{s.prefix + id, s.indexKey(principal)}, principal, tenant).Text()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrTokenNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("trusted store: consume: %w", err)
	}
	var rec Record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return Record{}, fmt.Errorf("trusted store: decode record: %w", err)
	}
	return rec, nil
}

// Ping checks that Redis answers.
func (s *RedisStore) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// Close closes the connection pool if OpenRedisStore opened it.
func (s *RedisStore) Close() error {
	if s.own {
		return s.client.Close()
	}
	return nil
}

// OpenStore opens the store named by the trusted.store setting: "memory"
// (or empty) for a MemoryStore, redis:// or rediss:// for a RedisStore,
// with the default TokenLimits.
func OpenStore(ctx context.Context, spec string) (TokenStore, error) {
	return OpenStoreLimits(ctx, spec, TokenLimits{})
}

// OpenStoreLimits is OpenStore with the caps per principal of limits.
func OpenStoreLimits(ctx context.Context, spec string, limits TokenLimits) (TokenStore, error) {
	switch {
	case spec == "" || spec == "memory":
		s := NewMemoryStore(0)
		s.SetLimits(limits)
		return s, nil
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		s, err := OpenRedisStore(ctx, spec)
		if err != nil {
			return nil, err
		}
		s.SetLimits(limits)
		return s, nil
	}
	return nil, fmt.Errorf("trusted store %q: want memory or redis://host:port/db", redactURL(spec))
}
