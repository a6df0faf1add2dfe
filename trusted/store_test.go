package trusted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/internal/testkit"
)

// storeFactories are the stores the conformance suite runs against. Each
// Redis store gets its own key prefix so that parallel runs do not meet.
func storeFactories() map[string]func(t *testing.T) TokenStore {
	return map[string]func(t *testing.T) TokenStore{
		"memory": func(t *testing.T) TokenStore {
			s := NewMemoryStore(time.Hour)
			t.Cleanup(func() { s.Close() })
			return s
		},
		"redis": func(t *testing.T) TokenStore {
			c := testkit.Redis(t)
			_, id, err := NewToken()
			require.NoError(t, err)
			return NewRedisStore(c, "harness-test:"+id[:12]+":")
		},
	}
}

func testRecord(principal, tenant string, ttl time.Duration) Record {
	a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": "x\n", "n": 1.5}}
	h, _ := a.Hash()
	now := time.Now()
	return Record{
		Action: a, ActionHash: h, Principal: principal, Tenant: tenant,
		CreatedAt: now, ExpiresAt: now.Add(ttl),
		Files: []FileState{{Path: "f.txt", Exists: true, SHA256: "ab"}},
	}
}

// TestTokenStoreConformance is the one behaviour every TokenStore must
// have, run against the memory store and a real Redis.
func TestTokenStoreConformance(t *testing.T) {
	for name, open := range storeFactories() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			t.Run("consume returns what was put, once", func(t *testing.T) {
				s := open(t)
				_, id, _ := NewToken()
				want := testRecord("alice", "acme", time.Minute)
				require.NoError(t, s.Put(ctx, id, want))
				got, err := s.Consume(ctx, id, "alice", "acme")
				require.NoError(t, err)
				require.Equal(t, want.ActionHash, got.ActionHash)
				require.Equal(t, want.Files, got.Files)
				require.Equal(t, want.Action.Input, got.Action.Input)
				h, err := got.Action.Hash()
				require.NoError(t, err)
				require.Equal(t, want.ActionHash, h, "the stored action must hash as previewed")
				_, err = s.Consume(ctx, id, "alice", "acme")
				require.ErrorIs(t, err, ErrTokenNotFound)
			})
			t.Run("unknown id is not found", func(t *testing.T) {
				s := open(t)
				_, id, _ := NewToken()
				_, err := s.Consume(ctx, id, "alice", "")
				require.ErrorIs(t, err, ErrTokenNotFound)
			})
			for _, c := range []struct{ name, principal, tenant string }{
				{"foreign principal", "mallory", "acme"},
				{"foreign tenant", "alice", "other"},
				{"empty tenant", "alice", ""},
			} {
				t.Run(c.name+" neither gets nor burns the token", func(t *testing.T) {
					s := open(t)
					_, id, _ := NewToken()
					require.NoError(t, s.Put(ctx, id, testRecord("alice", "acme", time.Minute)))
					_, err := s.Consume(ctx, id, c.principal, c.tenant)
					require.ErrorIs(t, err, ErrTokenNotFound)
					_, err = s.Consume(ctx, id, "alice", "acme")
					require.NoError(t, err, "the owner can still redeem")
				})
			}
			t.Run("concurrent consumers: exactly one wins", func(t *testing.T) {
				s := open(t)
				for round := 0; round < 5; round++ {
					_, id, _ := NewToken()
					require.NoError(t, s.Put(ctx, id, testRecord("alice", "", time.Minute)))
					var wins, misses atomic.Int64
					var wg sync.WaitGroup
					for i := 0; i < 64; i++ {
						wg.Add(1)
						go func() {
							defer wg.Done()
							_, err := s.Consume(ctx, id, "alice", "")
							switch {
							case err == nil:
								wins.Add(1)
							case errors.Is(err, ErrTokenNotFound):
								misses.Add(1)
							default:
								t.Errorf("consume: %v", err)
							}
						}()
					}
					wg.Wait()
					require.EqualValues(t, 1, wins.Load(), "round %d", round)
					require.EqualValues(t, 63, misses.Load(), "round %d", round)
				}
			})
			t.Run("ping", func(t *testing.T) {
				require.NoError(t, open(t).Ping(ctx))
			})
		})
	}
}

func TestRedisStoreExpiresInRedis(t *testing.T) {
	c := testkit.Redis(t)
	s := NewRedisStore(c, "harness-test-exp:")
	ctx := context.Background()
	_, id, _ := NewToken()
	require.NoError(t, s.Put(ctx, id, testRecord("alice", "", time.Second)))
	ttl, err := c.PTTL(ctx, "harness-test-exp:"+id).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Duration(0), "the key carries a Redis expiry")
	require.LessOrEqual(t, ttl, time.Second)
	time.Sleep(1200 * time.Millisecond)
	_, err = s.Consume(ctx, id, "alice", "")
	require.ErrorIs(t, err, ErrTokenNotFound)
}

func TestRedisStoreKeepsOnlyTheTokenHash(t *testing.T) {
	c := testkit.Redis(t)
	prefix := "harness-test-hash:"
	s := NewRedisStore(c, prefix)
	ctx := context.Background()
	tok, id, _ := NewToken()
	require.NoError(t, s.Put(ctx, id, testRecord("alice", "", time.Minute)))
	t.Cleanup(func() { c.Del(ctx, prefix+id) })
	keys, err := c.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	require.Contains(t, keys, prefix+id)
	t.Cleanup(func() { c.Del(ctx, s.indexKey("alice")) })
	require.Contains(t, keys, s.indexKey("alice"), "the principal's index")
	for _, k := range keys {
		require.NotContains(t, k, tok)
		var vals []string
		switch typ := c.Type(ctx, k).Val(); typ {
		case "hash":
			m, err := c.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			for _, v := range m {
				vals = append(vals, v)
			}
		case "zset":
			vals, err = c.ZRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
		default:
			t.Fatalf("key %s has unexpected type %s", k, typ)
		}
		for _, v := range vals {
			require.NotContains(t, v, tok, "the token itself must never be stored")
		}
	}
}

func TestMemoryStoreSweep(t *testing.T) {
	s := NewMemoryStore(time.Hour)
	defer s.Close()
	ctx := context.Background()
	for i, ttl := range []time.Duration{-time.Second, -time.Millisecond, time.Minute} {
		require.NoError(t, s.Put(ctx, fmt.Sprint(i), testRecord("a", "", ttl)))
	}
	var told int
	s.OnExpire(func(n int) { told += n })
	require.Equal(t, 2, s.Sweep())
	require.Equal(t, 1, s.Len())
	require.Equal(t, 2, told)
	require.Equal(t, 0, s.Sweep())
	require.Equal(t, 2, told, "an empty sweep tells nothing")
}

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, spec string
		wantErr    bool
	}{
		{"memory", "memory", false},
		{"empty is memory", "", false},
		{"unknown scheme", "etcd://x", true},
		{"bad redis url", "redis://127.0.0.1:notaport/0", true},
		{"unreachable redis", "redis://127.0.0.1:1/0", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := OpenStore(ctx, c.spec)
			if c.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.NoError(t, s.Close())
		})
	}
}

func TestRedactURL(t *testing.T) {
	require.Equal(t, "redis://…@h:1/0", redactURL("redis://u:secret@h:1/0"))
	require.Equal(t, "redis://h:1/0", redactURL("redis://h:1/0"))
}

func TestNewTokenShape(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		tok, id, err := NewToken()
		require.NoError(t, err)
		require.True(t, wellFormed(tok), tok)
		require.Len(t, id, 64)
		require.Equal(t, TokenID(tok), id)
		require.False(t, seen[tok])
		seen[tok] = true
	}
	for _, bad := range []string{"", "htk_", "xyz_" + string(make([]byte, 43)), "htk_" + "!" + string(make([]byte, 42))} {
		require.False(t, wellFormed(bad), "%q", bad)
	}
}

// TestStoreOutageFailsClosed: when the store cannot be reached, a preview
// mints nothing and an execute runs nothing; both are internal errors
// (500), never not_found, so that an outage is not mistaken for a used
// token, and /readyz says so.
func TestStoreOutageFailsClosed(t *testing.T) {
	c := testkit.Redis(t)
	opts := *c.Options()
	broken := redis.NewClient(&opts)
	store := NewRedisStore(broken, "harness-test-outage:")
	f := newFixture(t, fixtureOpts{store: store})
	tok := f.preview(t, keyAlice, patchAction("f.txt", "never\n"))
	t.Cleanup(func() { c.Del(context.Background(), "harness-test-outage:"+TokenID(tok)) })
	broken.Close()

	st, body := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
	require.Equal(t, 500, st, "%v", body)
	require.Equal(t, "internal", errCode(body))
	require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"))
	st, body = call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, patchAction("f.txt", "x\n"))
	require.Equal(t, 500, st, "%v", body)
	st, body = call(t, "GET", f.URL+"/readyz", "", nil)
	require.Equal(t, 503, st, "%v", body)
	require.NotContains(t, f.Logs.String(), tok)
}

// limitedStores opens, for each store kind, replicas stores that share
// their tokens (one memory store is its own only replica; Redis stores get
// one client each, as replicas do, on one fresh key prefix) with limits l.
func limitedStores(t *testing.T, kind string, replicas int, l TokenLimits) []TokenStore {
	t.Helper()
	if kind == "memory" {
		s := NewMemoryStore(time.Hour)
		s.SetLimits(l)
		t.Cleanup(func() { s.Close() })
		return []TokenStore{s}
	}
	_, id, err := NewToken()
	require.NoError(t, err)
	prefix := "harness-test-limits:" + id[:12] + ":"
	var out []TokenStore
	for range replicas {
		c := testkit.Redis(t)
		s := NewRedisStore(c, prefix)
		s.SetLimits(l)
		out = append(out, s)
	}
	t.Cleanup(func() {
		c := testkit.Redis(t)
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return out
}

// storedSize is what the store counts for rec.
func storedSize(t *testing.T, s TokenStore, rec Record) int64 {
	t.Helper()
	if _, ok := s.(*MemoryStore); ok {
		return recordSize(rec)
	}
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	return int64(len(b))
}

// liveTokens is how many records the store holds for principal.
func liveTokens(t *testing.T, s TokenStore, principal string) int64 {
	t.Helper()
	switch s := s.(type) {
	case *MemoryStore:
		n, _ := s.Held(principal)
		return int64(n)
	case *RedisStore:
		n, err := s.client.ZCard(context.Background(), s.indexKey(principal)).Result()
		require.NoError(t, err)
		return n
	}
	t.Fatalf("unknown store %T", s)
	return 0
}

func bigRecord(principal string, contentBytes int, ttl time.Duration) Record {
	r := testRecord(principal, "acme", ttl)
	r.Action.Input = map[string]any{"path": "f.txt", "content": strings.Repeat("x", contentBytes)}
	return r
}

// putN stores n fresh records built by mk and returns their IDs.
func putN(t *testing.T, s TokenStore, n int, mk func() Record) []string {
	t.Helper()
	var ids []string
	for i := range n {
		_, id, _ := NewToken()
		require.NoError(t, s.Put(context.Background(), id, mk()), "record %d", i)
		ids = append(ids, id)
	}
	return ids
}

// requireLimited asserts err is a refusal by the kind cap with code, and
// that the refused record was not stored under id.
func requireLimited(t *testing.T, s TokenStore, id, principal string, err error, code action.Code, kind LimitKind) *LimitError {
	t.Helper()
	require.ErrorIs(t, err, ErrTokenLimit)
	require.Equal(t, code, action.CodeOf(err), "%v", err)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, kind, le.Kind)
	require.Equal(t, principal, le.Principal)
	_, cerr := s.Consume(context.Background(), id, principal, "acme")
	require.ErrorIs(t, cerr, ErrTokenNotFound, "a refused record must not be stored")
	return le
}

// TestTokenStoreLimits: each principal's live tokens are capped in number
// and in bytes, in both stores; over a cap Put stores nothing and says
// which cap, with the code the HTTP layer maps (rate_limited 429, or
// too_large 413 for a record that can never fit); expired and redeemed
// tokens free room; one principal's cap is not another's.
func TestTokenStoreLimits(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"memory", "redis"} {
		t.Run(kind, func(t *testing.T) {
			small := func() Record { return testRecord("alice", "acme", time.Minute) }
			t.Run("count cap", func(t *testing.T) {
				s := limitedStores(t, kind, 1, TokenLimits{MaxTokens: 3, MaxBytes: -1})[0]
				putN(t, s, 3, small)
				_, id, _ := NewToken()
				le := requireLimited(t, s, id, "alice", s.Put(ctx, id, small()), action.CodeRateLimited, LimitTokens)
				require.EqualValues(t, 3, le.Held)
				require.EqualValues(t, 3, le.Max)
				require.Greater(t, le.RetryAfter, time.Duration(0))
				require.LessOrEqual(t, le.RetryAfter, time.Minute)
				var ae *action.Error
				require.ErrorAs(t, s.Put(ctx, id, small()), &ae)
				require.Contains(t, ae.Payload, "retry_after_ms")
				require.Equal(t, "tokens", ae.Payload["limit"])
				require.EqualValues(t, 3, liveTokens(t, s, "alice"))
			})
			t.Run("byte cap", func(t *testing.T) {
				mk := func() Record { return bigRecord("alice", 4000, time.Minute) }
				size := storedSize(t, limitedStores(t, kind, 1, TokenLimits{})[0], mk())
				s := limitedStores(t, kind, 1, TokenLimits{MaxTokens: -1, MaxBytes: 2*size + size/2})[0]
				putN(t, s, 2, mk)
				_, id, _ := NewToken()
				le := requireLimited(t, s, id, "alice", s.Put(ctx, id, mk()), action.CodeRateLimited, LimitBytes)
				// Timestamps make the encodings differ by a few bytes.
				require.InDelta(t, 2*size, le.Held, 64)
				require.InDelta(t, size, le.Size, 32)
				require.Greater(t, le.RetryAfter, time.Duration(0))
				// Small records still fit in what is left.
				putN(t, s, 1, small)
			})
			t.Run("a record larger than the byte cap is too large", func(t *testing.T) {
				// One record for both stores: a fresh one could encode its
				// expiry in fewer bytes (RFC 3339 drops trailing zeros).
				rec := bigRecord("alice", 4000, time.Minute)
				size := storedSize(t, limitedStores(t, kind, 1, TokenLimits{})[0], rec)
				s := limitedStores(t, kind, 1, TokenLimits{MaxBytes: size - 1})[0]
				_, id, _ := NewToken()
				err := s.Put(ctx, id, rec)
				le := requireLimited(t, s, id, "alice", err, action.CodeTooLarge, LimitBytes)
				require.Zero(t, le.RetryAfter, "waiting cannot help")
				var ae *action.Error
				require.ErrorAs(t, err, &ae)
				require.NotContains(t, ae.Payload, "retry_after_ms")
			})
			t.Run("one principal at its cap does not block another", func(t *testing.T) {
				s := limitedStores(t, kind, 1, TokenLimits{MaxTokens: 2})[0]
				putN(t, s, 2, small)
				_, id, _ := NewToken()
				requireLimited(t, s, id, "alice", s.Put(ctx, id, small()), action.CodeRateLimited, LimitTokens)
				bob := putN(t, s, 2, func() Record { return testRecord("bob", "acme", time.Minute) })
				_, err := s.Consume(ctx, bob[0], "bob", "acme")
				require.NoError(t, err)
				// The cap is the principal's, whatever tenant it acts for.
				other := testRecord("alice", "other", time.Minute)
				_, id, _ = NewToken()
				require.ErrorIs(t, s.Put(ctx, id, other), ErrTokenLimit)
			})
			t.Run("expired tokens do not count", func(t *testing.T) {
				s := limitedStores(t, kind, 1, TokenLimits{MaxTokens: 2})[0]
				putN(t, s, 2, func() Record { return testRecord("alice", "acme", 300*time.Millisecond) })
				_, id, _ := NewToken()
				le := requireLimited(t, s, id, "alice", s.Put(ctx, id, small()), action.CodeRateLimited, LimitTokens)
				require.LessOrEqual(t, le.RetryAfter, 300*time.Millisecond)
				time.Sleep(le.RetryAfter + 100*time.Millisecond)
				putN(t, s, 2, small)
				require.EqualValues(t, 2, liveTokens(t, s, "alice"))
			})
			t.Run("redemption frees room", func(t *testing.T) {
				s := limitedStores(t, kind, 1, TokenLimits{MaxTokens: 2})[0]
				ids := putN(t, s, 2, small)
				_, id, _ := NewToken()
				requireLimited(t, s, id, "alice", s.Put(ctx, id, small()), action.CodeRateLimited, LimitTokens)
				_, err := s.Consume(ctx, ids[0], "mallory", "acme")
				require.ErrorIs(t, err, ErrTokenNotFound)
				require.ErrorIs(t, s.Put(ctx, id, small()), ErrTokenLimit, "a foreign consume frees nothing")
				_, err = s.Consume(ctx, ids[0], "alice", "acme")
				require.NoError(t, err)
				require.NoError(t, s.Put(ctx, id, small()))
				require.EqualValues(t, 2, liveTokens(t, s, "alice"))
			})
			t.Run("defaults apply without SetLimits", func(t *testing.T) {
				s := limitedStores(t, kind, 1, TokenLimits{})[0]
				putN(t, s, DefaultMaxTokensPerPrincipal, small)
				_, id, _ := NewToken()
				requireLimited(t, s, id, "alice", s.Put(ctx, id, small()), action.CodeRateLimited, LimitTokens)
			})
			t.Run("negative limits mean no cap", func(t *testing.T) {
				s := limitedStores(t, kind, 1, TokenLimits{MaxTokens: -1, MaxBytes: -1})[0]
				putN(t, s, DefaultMaxTokensPerPrincipal+5, small)
			})
		})
	}
}

// TestTokenStoreLimitsUnderConcurrency: concurrent minting never passes a
// cap, in one process or across replicas sharing Redis (four stores, each
// with its own connection pool).
func TestTokenStoreLimitsUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"memory", "redis"} {
		t.Run(kind, func(t *testing.T) {
			t.Run("a burst of mints", func(t *testing.T) {
				for _, c := range []struct {
					name string
					l    func(size int64) TokenLimits
					want int64
				}{
					{"count", func(int64) TokenLimits { return TokenLimits{MaxTokens: 7, MaxBytes: -1} }, 7},
					{"bytes", func(size int64) TokenLimits { return TokenLimits{MaxTokens: -1, MaxBytes: 5*size + size/2} }, 5},
				} {
					t.Run(c.name, func(t *testing.T) {
						rec := bigRecord("alice", 2000, time.Minute)
						size := storedSize(t, limitedStores(t, kind, 1, TokenLimits{})[0], rec)
						stores := limitedStores(t, kind, 4, c.l(size))
						var ok, limited atomic.Int64
						var wg sync.WaitGroup
						for i := range 64 {
							wg.Go(func() {
								_, id, _ := NewToken()
								switch err := stores[i%len(stores)].Put(ctx, id, rec); {
								case err == nil:
									ok.Add(1)
								case errors.Is(err, ErrTokenLimit):
									limited.Add(1)
								default:
									t.Errorf("put: %v", err)
								}
							})
						}
						wg.Wait()
						require.Equal(t, c.want, ok.Load())
						require.Equal(t, 64-c.want, limited.Load())
						require.Equal(t, c.want, liveTokens(t, stores[0], "alice"))
					})
				}
			})
			t.Run("mint and redeem in a loop", func(t *testing.T) {
				const limit = 4
				stores := limitedStores(t, kind, 4, TokenLimits{MaxTokens: limit})
				var live, peak, minted atomic.Int64
				var wg sync.WaitGroup
				for i := range 16 {
					wg.Go(func() {
						s := stores[i%len(stores)]
						for range 25 {
							_, id, _ := NewToken()
							err := s.Put(ctx, id, testRecord("alice", "acme", time.Minute))
							if errors.Is(err, ErrTokenLimit) {
								continue
							}
							if err != nil {
								t.Errorf("put: %v", err)
								return
							}
							minted.Add(1)
							// live counts tokens between a Put that returned and
							// the Consume that follows: never more than stored.
							n := live.Add(1)
							for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
							}
							live.Add(-1)
							if _, err := s.Consume(ctx, id, "alice", "acme"); err != nil {
								t.Errorf("consume: %v", err)
								return
							}
						}
					})
				}
				wg.Wait()
				require.LessOrEqual(t, peak.Load(), int64(limit))
				require.Greater(t, minted.Load(), int64(limit), "tokens were minted again after redemption")
				require.Zero(t, liveTokens(t, stores[0], "alice"))
			})
		})
	}
}

func TestRedisStoreIndexExpires(t *testing.T) {
	s := limitedStores(t, "redis", 1, TokenLimits{})[0].(*RedisStore)
	ctx := context.Background()
	putN(t, s, 1, func() Record { return testRecord("alice", "acme", 2*time.Second) })
	putN(t, s, 1, func() Record { return testRecord("alice", "acme", time.Second) })
	ttl, err := s.client.PTTL(ctx, s.indexKey("alice")).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, time.Second, "the index lives as long as its longest-lived token")
	require.LessOrEqual(t, ttl, 2*time.Second, "and no longer")
}

func TestRecordSizeCountsTheInput(t *testing.T) {
	big := bigRecord("a", 1<<20, time.Minute)
	b, err := json.Marshal(big)
	require.NoError(t, err)
	require.Greater(t, recordSize(big), int64(1<<20))
	require.InDelta(t, len(b), recordSize(big), float64(len(b))/20, "the estimate is within 5%% of the encoding")
	empty := testRecord("a", "", time.Minute)
	empty.Action.Input = map[string]any{}
	nested := empty
	nested.Action.Input = map[string]any{"l": make([]any, 1000)}
	require.GreaterOrEqual(t, recordSize(nested), recordSize(empty)+1000*valueOverhead, "every value costs something, even an empty one")
}
