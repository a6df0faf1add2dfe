package trusted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// Each record is a Redis hash (principal, tenant, record JSON) under
// prefix+ID with an expiry at the record's ExpiresAt, so Redis itself drops
// expired tokens. Consume is one Lua script (compare principal and tenant,
// then delete and return), which Redis runs atomically: of any number of
// concurrent redeemers, across processes, exactly one gets the record.
//
// The record (including the action's input) is stored in Redis in clear;
// the token is not, only its SHA-256. Protect the Redis instance as you
// would the workspace.
type RedisStore struct {
	client *redis.Client
	prefix string
	own    bool
}

// consumeScript returns the record and deletes the key only when principal
// (ARGV[1]) and tenant (ARGV[2]) match; otherwise it returns nil and leaves
// the key alone.
var consumeScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'p', 't', 'r')
if not v[3] then return false end
if v[1] ~= ARGV[1] or v[2] ~= ARGV[2] then return false end
redis.call('DEL', KEYS[1])
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
// that has already expired is not stored.
func (s *RedisStore) Put(ctx context.Context, id string, rec Record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("trusted store: encode record: %w", err)
	}
	if !time.Now().Before(rec.ExpiresAt) {
		return nil
	}
	key := s.prefix + id
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "p", rec.Principal, "t", rec.Tenant, "r", data)
		p.PExpireAt(ctx, key, rec.ExpiresAt)
		return nil
	})
	if err != nil {
		return fmt.Errorf("trusted store: put: %w", err)
	}
	return nil
}

// Consume atomically removes and returns the record under id if it belongs
// to principal and tenant.
func (s *RedisStore) Consume(ctx context.Context, id, principal, tenant string) (Record, error) {
	raw, err := consumeScript.Run(ctx, s.client, []string{s.prefix + id}, principal, tenant).Text()
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
// (or empty) for a MemoryStore, redis:// or rediss:// for a RedisStore.
func OpenStore(ctx context.Context, spec string) (TokenStore, error) {
	switch {
	case spec == "" || spec == "memory":
		return NewMemoryStore(0), nil
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		return OpenRedisStore(ctx, spec)
	}
	return nil, fmt.Errorf("trusted store %q: want memory or redis://host:port/db", redactURL(spec))
}
