package audit

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/harness-runtime/harness/internal/testkit"
)

// The benchmarks write and verify keyed chains, as Harness does.

// benchEvent is the size of a typical sanitized post_action event.
var benchEvent = map[string]any{
	"kind": "post_action", "session_id": "s-1", "agent_id": "agent-7", "depth": 0,
	"timestamp": "2026-11-21T23:05:00.123Z",
	"payload": map[string]any{
		"action": "workspace_read_file", "input": map[string]any{"path": "src/main.go", "limit": 200},
		"observation": map[string]any{"source": "workspace", "status": "ok", "code": "", "latency_ms": 0.42,
			"payload_keys": []any{"content", "size", "truncated"}},
		"task_id": "t-1", "step_id": "3",
	},
}

// appendModes are the two ways every append benchmark runs.
var appendModes = []struct {
	name    string
	durable bool
}{{"nondurable", false}, {"durable", true}}

func BenchmarkJSONLAppend(b *testing.B) {
	for _, mode := range appendModes {
		b.Run(mode.name, func(b *testing.B) {
			l, err := OpenJSONL(filepath.Join(b.TempDir(), "bench.jsonl"), WithKey(testKey))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			ctx := context.Background()
			for b.Loop() {
				if _, err := l.Append(ctx, benchEvent, mode.durable); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkJSONLAppendParallel appends from 16 goroutines per CPU; the
// durable case shows what group commit saves (fsyncs per append is
// reported).
func BenchmarkJSONLAppendParallel(b *testing.B) {
	for _, mode := range appendModes {
		b.Run(mode.name, func(b *testing.B) {
			l, err := OpenJSONL(filepath.Join(b.TempDir(), "bench.jsonl"), WithKey(testKey))
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			var syncs atomic.Int64
			l.syncFile = func(f *os.File) error { syncs.Add(1); return f.Sync() }
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Append(context.Background(), benchEvent, mode.durable); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(syncs.Load())/float64(b.N), "fsyncs/op")
		})
	}
}

func BenchmarkPostgresAppend(b *testing.B) {
	dsn := testkit.Postgres(b)
	for _, mode := range appendModes {
		b.Run(mode.name, func(b *testing.B) {
			table := testTable(b, dsn)
			p, err := OpenPostgres(context.Background(), dsn, "bench", WithTable(table), WithKey(testKey))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			for b.Loop() {
				if _, err := p.Append(ctx, benchEvent, mode.durable); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyJSONL(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	l, err := OpenJSONL(path, WithKey(testKey))
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if _, err := l.Append(context.Background(), benchEvent, false); err != nil {
			b.Fatal(err)
		}
	}
	l.Close()
	data := readAll(b, path)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if rep, err := VerifyJSONL(bytes.NewReader(data), WithKey(testKey)); err != nil || !rep.OK() {
			b.Fatal(rep, err)
		}
	}
}
