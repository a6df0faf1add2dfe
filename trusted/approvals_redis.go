package trusted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// DefaultApprovalsRedisPrefix is put before every approval's Redis key.
const DefaultApprovalsRedisPrefix = "harness:approval:"

// RedisApprovals is an ApprovalStore in Redis, shared by every replica
// that points at the same database: an approval requested on one replica
// is listed, decided and redeemed on any other.
//
// Each approval is a Redis hash under prefix+id: its status ("s"), its
// expiry in Unix milliseconds ("e"), whether its run was handed out ("c")
// and the whole StoredApproval as JSON ("d"), with a Redis expiry at the
// approval's expiry plus the retention. A sorted set (prefix+"index",
// scored by creation time) lists them. Decide and Claim are Lua scripts
// that check the status and change it in one step, so of any number of
// concurrent deciders (or claimers), across replicas, exactly one
// succeeds. Session grants are keys under prefix+"grant:" with their own
// expiry. The expiry of a pending approval is compared with the
// deciding replica's clock (replicas' clocks are assumed in step).
//
// The pending action (its input included) is stored in clear: protect
// the Redis instance as you would the workspace.
type RedisApprovals struct {
	client *redis.Client
	prefix string
	own    bool
	opts   ApprovalStoreOptions
	now    func() time.Time
}

var _ ApprovalStore = (*RedisApprovals)(nil)

// NewRedisApprovals returns a store over an existing client (Close does
// not close it); an empty prefix means DefaultApprovalsRedisPrefix.
func NewRedisApprovals(client *redis.Client, prefix string, opts ApprovalStoreOptions) *RedisApprovals {
	if prefix == "" {
		prefix = DefaultApprovalsRedisPrefix
	}
	return &RedisApprovals{client: client, prefix: prefix, opts: opts.withDefaults(), now: time.Now}
}

// OpenApprovalStore opens the approvals store of the trusted.store
// setting: memory (or empty), or redis:// / rediss://.
func OpenApprovalStore(ctx context.Context, spec string, opts ApprovalStoreOptions) (ApprovalStore, error) {
	switch {
	case spec == "" || spec == "memory":
		return NewMemoryApprovalsWith(opts), nil
	case strings.HasPrefix(spec, "redis://") || strings.HasPrefix(spec, "rediss://"):
		ro, err := redis.ParseURL(spec)
		if err != nil {
			return nil, fmt.Errorf("approvals store: %w", err)
		}
		client := redis.NewClient(ro)
		s := NewRedisApprovals(client, "", opts)
		s.own = true
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err := s.Ping(pctx); err != nil {
			client.Close()
			return nil, fmt.Errorf("approvals store %s: %w", redactURL(spec), err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("approvals store %q: want memory or redis://host:port/db", redactURL(spec))
}

func (s *RedisApprovals) key(id string) string { return s.prefix + id }
func (s *RedisApprovals) index() string        { return s.prefix + "index" }

// life is how long Redis keeps an approval after it expires unanswered.
func (s *RedisApprovals) keepUntil(st StoredApproval) time.Time {
	end := st.ExpiresAt
	if st.DecidedAt.After(end) {
		end = st.DecidedAt
	}
	return end.Add(s.opts.Retention)
}

// requestScript stores a new approval and indexes it, trimming the index
// of members past the retention and, beyond the cap, the oldest. KEYS:
// the approval, the index. ARGV: the JSON, the expiry (ms), the key's
// expiry (ms), the creation (ms), the id, the oldest creation kept (ms),
// the cap.
var requestScript = redis.NewScript(`
redis.call('HSET', KEYS[1], 's', 'pending', 'e', ARGV[2], 'd', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[6])
local n = redis.call('ZCARD', KEYS[2])
local cap = tonumber(ARGV[7])
if n > cap then
  local old = redis.call('ZRANGE', KEYS[2], 0, n - cap - 1)
  for _, id in ipairs(old) do
    redis.call('DEL', string.sub(KEYS[1], 1, #KEYS[1] - #ARGV[5]) .. id)
  end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, n - cap - 1)
end
return 0
`)

// Request stores p as a pending approval.
func (s *RedisApprovals) Request(ctx context.Context, p runtime.PendingApproval) (action.Approval, error) {
	id, err := newApprovalID()
	if err != nil {
		return action.Approval{}, err
	}
	now := s.now()
	if p.Created.IsZero() {
		p.Created = now.UTC()
	}
	st := StoredApproval{ID: id, Status: ApprovalPending, Pending: p, ExpiresAt: now.Add(s.opts.TTL).UTC()}
	data, err := json.Marshal(st)
	if err != nil {
		return action.Approval{}, fmt.Errorf("approvals store: encode: %w", err)
	}
	oldest := now.Add(-s.opts.TTL - s.opts.Retention)
	err = requestScript.Run(ctx, s.client, []string{s.key(id), s.index()},
		data, st.ExpiresAt.UnixMilli(), s.keepUntil(st).UnixMilli(), p.Created.UnixMilli(), id,
		oldest.UnixMilli(), s.opts.Max).Err()
	if err != nil {
		return action.Approval{}, fmt.Errorf("approvals store: request: %w", err)
	}
	return approvalOf(st), nil
}

func decodeApproval(raw string) (StoredApproval, error) {
	var st StoredApproval
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: decode: %w", err)
	}
	return st, nil
}

// Get returns the approval id.
func (s *RedisApprovals) Get(ctx context.Context, id string) (StoredApproval, error) {
	raw, err := s.client.HGet(ctx, s.key(id), "d").Result()
	if errors.Is(err, redis.Nil) {
		return StoredApproval{}, ErrApprovalNotFound
	}
	if err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: get: %w", err)
	}
	return decodeApproval(raw)
}

// List returns the approvals with status ("" for all), newest first.
func (s *RedisApprovals) List(ctx context.Context, status string) ([]StoredApproval, error) {
	ids, err := s.client.ZRevRange(ctx, s.index(), 0, int64(s.opts.Max)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("approvals store: list: %w", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGet(ctx, s.key(id), "d")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("approvals store: list: %w", err)
	}
	out := make([]StoredApproval, 0, len(ids))
	var gone []any
	for i, c := range cmds {
		raw, err := c.Result()
		if errors.Is(err, redis.Nil) {
			gone = append(gone, ids[i])
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("approvals store: list: %w", err)
		}
		st, err := decodeApproval(raw)
		if err != nil {
			return nil, err
		}
		if status == "" || st.Status == status {
			out = append(out, st)
		}
	}
	if len(gone) > 0 { // expired by Redis: forget them in the index too
		s.client.ZRem(ctx, s.index(), gone...)
	}
	sortNewestFirst(out)
	return out, nil
}

// decideScript makes a pending approval's one transition. KEYS: the
// approval, the grant (or the approval again when none). ARGV: now (ms),
// the decided JSON, the decided status, the expired JSON, the key's
// expiry when decided and when expired (ms), the grant's expiry (ms, 0 for
// none), the id, whether only an expiry is asked ("1"). It returns {0,
// JSON} decided, {1, JSON} not pending, {2, JSON} expired now, {3, JSON}
// not expired yet (expiry asked), {4} unknown.
var decideScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 'e', 'd')
if not v[1] then return {4, ''} end
if v[1] ~= 'pending' then return {1, v[3]} end
if tonumber(v[2]) <= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 's', 'expired', 'd', ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[6])
  return {2, ARGV[4]}
end
if ARGV[9] == '1' then return {3, v[3]} end
redis.call('HSET', KEYS[1], 's', ARGV[3], 'd', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
if tonumber(ARGV[7]) > 0 then
  redis.call('SET', KEYS[2], ARGV[8])
  redis.call('PEXPIREAT', KEYS[2], ARGV[7])
end
return {0, ARGV[2]}
`)

// Decide makes the one transition of a pending approval (see
// ApprovalStore.Decide). The decided record is built from a read made
// just before; the script applies it only while the approval is still
// pending, so what it writes is that read plus the decision.
func (s *RedisApprovals) Decide(ctx context.Context, id string, d StoreDecision) (StoredApproval, error) {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return StoredApproval{}, err
	}
	if cur.Status != ApprovalPending {
		return cur, ErrApprovalDecided
	}
	at := d.At.UTC()
	expired := cur
	expired.Status, expired.DecidedAt = ApprovalExpired, at
	decided := cur
	if d.Status != ApprovalExpired {
		decided.Status, decided.DecidedBy, decided.DecidedAt = d.Status, d.DecidedBy, at
		decided.Scope, decided.Reason, decided.Method = d.Scope, d.Reason, d.Method
	}
	dj, err := json.Marshal(decided)
	if err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: encode: %w", err)
	}
	ej, err := json.Marshal(expired)
	if err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: encode: %w", err)
	}
	grantKeyName, grantUntil := s.key(id), int64(0)
	if d.Status == ApprovalApproved && d.Scope == ScopeSession && cur.Pending.Action.SessionID != "" {
		grantKeyName = s.prefix + "grant:" + grantKey(cur.Tenant(), cur.Pending.Action.SessionID, cur.Pending.ActionHash)
		grantUntil = at.Add(s.opts.GrantTTL).UnixMilli()
	}
	onlyExpiry := "0"
	if d.Status == ApprovalExpired {
		onlyExpiry = "1"
	}
	res, err := decideScript.Run(ctx, s.client, []string{s.key(id), grantKeyName},
		at.UnixMilli(), dj, d.Status, ej, s.keepUntil(decided).UnixMilli(), s.keepUntil(expired).UnixMilli(),
		grantUntil, id, onlyExpiry).Slice()
	if err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: decide: %w", err)
	}
	code, _ := res[0].(int64)
	raw, _ := res[1].(string)
	if code == 4 {
		return StoredApproval{}, ErrApprovalNotFound
	}
	st, err := decodeApproval(raw)
	if err != nil {
		return StoredApproval{}, err
	}
	switch code {
	case 0:
		return st, nil
	case 1:
		return st, ErrApprovalDecided
	case 2:
		return st, ErrApprovalExpired
	default:
		return st, errNotExpired
	}
}

// claimScript marks an approved approval's run handed out, once. KEYS:
// the approval. ARGV: the claimed JSON. It returns {0, JSON} claimed,
// {1, JSON} claimed before, {2, JSON} not approved, {4} unknown.
var claimScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 's', 'c', 'd')
if not v[1] then return {4, ''} end
if v[1] ~= 'approved' then return {2, v[3]} end
if v[2] then return {1, v[3]} end
redis.call('HSET', KEYS[1], 'c', '1', 'd', ARGV[1])
return {0, ARGV[1]}
`)

// Claim hands an approved approval's run out once.
func (s *RedisApprovals) Claim(ctx context.Context, id string) (StoredApproval, error) {
	cur, err := s.Get(ctx, id)
	if err != nil {
		return StoredApproval{}, err
	}
	claimed := cur
	claimed.Claimed = true
	cj, err := json.Marshal(claimed)
	if err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: encode: %w", err)
	}
	res, err := claimScript.Run(ctx, s.client, []string{s.key(id)}, cj).Slice()
	if err != nil {
		return StoredApproval{}, fmt.Errorf("approvals store: claim: %w", err)
	}
	code, _ := res[0].(int64)
	raw, _ := res[1].(string)
	if code == 4 {
		return StoredApproval{}, ErrApprovalNotFound
	}
	st, err := decodeApproval(raw)
	if err != nil {
		return StoredApproval{}, err
	}
	switch code {
	case 0:
		return st, nil
	case 1:
		return st, ErrApprovalClaimed
	default:
		return st, ErrApprovalDecided
	}
}

// Granted reports the session-scoped approval covering the action of
// hash in tenant's session. A Redis failure answers no (the guard then
// asks again).
func (s *RedisApprovals) Granted(ctx context.Context, tenant, session, hash string) (string, bool) {
	if session == "" {
		return "", false
	}
	id, err := s.client.Get(ctx, s.prefix+"grant:"+grantKey(tenant, session, hash)).Result()
	if err != nil {
		return "", false
	}
	return id, true
}

// Ping checks that Redis answers.
func (s *RedisApprovals) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redis ping: %w", err)
	}
	return nil
}

// Close closes the connection pool if OpenApprovalStore opened it.
func (s *RedisApprovals) Close() error {
	if s.own {
		return s.client.Close()
	}
	return nil
}
