package trusted

import (
	"context"
	"errors"
	"fmt"
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
	for _, k := range keys {
		vals, err := c.HGetAll(ctx, k).Result()
		require.NoError(t, err)
		require.NotContains(t, k, tok)
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
