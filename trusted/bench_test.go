package trusted

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/harness-runtime/harness/internal/testkit"
)

// BenchmarkPreviewExecute measures one HTTP preview -> execute pair of a
// small whole-file patch, with parallel clients each on its own file, for
// the memory and the Redis store. The workspace write and the durable
// audit records (fsync) are part of every pair.
//
//	go test -run XXX -bench PreviewExecute -benchtime 3s ./trusted
func BenchmarkPreviewExecute(b *testing.B) {
	stores := map[string]func(b *testing.B) TokenStore{
		"memory": func(*testing.B) TokenStore { return nil },
		"redis": func(b *testing.B) TokenStore {
			c := testkit.Redis(b)
			return NewRedisStore(c, "harness-bench:")
		},
	}
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			f := newFixture(b, fixtureOpts{store: stores[name](b)})
			var client atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				path := fmt.Sprintf("bench-%d.txt", client.Add(1))
				for n := 0; pb.Next(); n++ {
					tok := f.preview(b, keyAlice, patchAction(path, fmt.Sprintf("iteration %d\n", n)))
					st, o := call(b, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
					if st != 200 || o["status"] != "ok" {
						b.Fatalf("execute: %d %v", st, o)
					}
				}
			})
		})
	}
}

// BenchmarkConsume measures the token store's atomic consume alone.
func BenchmarkConsume(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			var s TokenStore = NewMemoryStore(0)
			if name == "redis" {
				s = NewRedisStore(testkit.Redis(b), "harness-bench:")
			}
			defer s.Close()
			rec := testRecord("alice", "", 60e9)
			ctx := b.Context()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, id, _ := NewToken()
				if err := s.Put(ctx, id, rec); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Consume(ctx, id, "alice", ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
