// Package testkit is what Harness's tests share: the real Redis and
// PostgreSQL the machine runs, found at HARNESS_TEST_REDIS and
// HARNESS_TEST_POSTGRES (or their local defaults), with one rule for a
// service that cannot be reached: the test is skipped, or fails when
// CI=true; a buffer safe to read while another goroutine writes it; and
// the check that a type's fast canonical form equals its JSON's.
package testkit

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Local defaults of the test services.
const (
	DefaultRedisURL    = "redis://127.0.0.1:6379/15"
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// RedisURL is HARNESS_TEST_REDIS, or database 15 of the local server.
func RedisURL() string {
	if u := os.Getenv("HARNESS_TEST_REDIS"); u != "" {
		return u
	}
	return DefaultRedisURL
}

// PostgresDSN is HARNESS_TEST_POSTGRES, or database test of the local
// server.
func PostgresDSN() string {
	if d := os.Getenv("HARNESS_TEST_POSTGRES"); d != "" {
		return d
	}
	return DefaultPostgresDSN
}

// Redis returns a client on the test Redis, closed when the test ends.
func Redis(t testing.TB) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("HARNESS_TEST_REDIS: %v", err)
	}
	c := redis.NewClient(opts)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		missing(t, "Redis at "+RedisURL(), "HARNESS_TEST_REDIS", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Postgres returns the DSN of the test database once it answers.
func Postgres(t testing.TB) string {
	t.Helper()
	dsn := PostgresDSN()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = conn.Ping(ctx)
		conn.Close(ctx)
	}
	if err != nil {
		missing(t, "PostgreSQL", "HARNESS_TEST_POSTGRES", err)
	}
	return dsn
}

// missing fails the test under CI=true and skips it otherwise.
func missing(t testing.TB, what, env string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required when CI=true (set %s): %v", what, env, err)
	}
	t.Skipf("%s not reachable (set %s): %v", what, env, err)
}

// SyncBuffer is a bytes.Buffer safe to read while another goroutine writes
// it (a log sink, a command's output).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
