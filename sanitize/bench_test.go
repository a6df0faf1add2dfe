package sanitize

import (
	"strings"
	"testing"
)

// loop runs body under b.Loop and also reports the process CPU time per
// operation (cpu-ns/op) and, when bytes > 0, CPU-time throughput
// (cpu-MB/s): wall time alone is meaningless on a machine shared by many
// busy processes.
func loop(b *testing.B, bytes int, body func()) {
	b.Helper()
	if bytes > 0 {
		b.SetBytes(int64(bytes))
	}
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		body()
	}
	cpu := processCPU() - start
	if cpu <= 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	if bytes > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
	}
}

// cleanLines are typical of what flows through events: code, logs, JSON,
// prose, hashes, UUIDs and URLs, none of them secret.
var cleanLines = []string{
	"func (s *Server) handle(w http.ResponseWriter, r *http.Request) {",
	"\tif err := json.NewDecoder(r.Body).Decode(&req); err != nil {",
	"\t\treturn fmt.Errorf(\"decode %s: %w\", r.URL.Path, err)",
	"2026-11-21T22:49:04Z INFO request id=123e4567-e89b-12d3-a456-426614174000 path=/v1/actions status=200 latency_ms=0.4",
	"commit 3f786850e387550fdab836ed7e6dc881de23001b Author: Ann Example <ann@example.com>",
	"The model proposes an action; Harness validates it against the schema registry, checks it with the policy guard and dispatches it.",
	`{"name":"workspace_read_file","input":{"path":"src/main.go","offset":0,"limit":200},"tenant":"acme","session_id":"s-1"}`,
	"See https://example.com/docs/api?page=2&sort=asc#section-3 for the details of pagination and sorting.",
	"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  harness-linux-amd64.tar.gz",
	"    max_tokens: 1024   # the upper bound of the completion, not a credential",
	"-rw-r--r--  1 ann  staff  4096 Nov 21 22:49 README.md",
	"Error: open /etc/harness/config.yaml: no such file or directory (exit status 2)",
}

// benchText returns about n bytes of clean text with a few secrets planted
// (one per 256 KiB), as in a command's output that happens to print one.
func benchText(n int) string {
	var b strings.Builder
	b.Grow(n + 256)
	secrets := []string{fakeGHP, "Authorization: Bearer " + fakeBearer, fakeAWSKeyID, fakeJWT}
	next := 0
	for i := 0; b.Len() < n; i++ {
		if b.Len() >= next*(256<<10)+128<<10 && next < len(secrets) {
			b.WriteString(secrets[next])
			b.WriteByte('\n')
			next++
		}
		b.WriteString(cleanLines[i%len(cleanLines)])
		b.WriteByte('\n')
	}
	return b.String()[:n]
}

// BenchmarkSanitize1MiB scans one 1 MiB mostly clean string in full
// (truncation off): the scanner's throughput.
func BenchmarkSanitize1MiB(b *testing.B) {
	s := newTestSanitizer(b, -1)
	text := benchText(1 << 20)
	if out := s.String(text); strings.Contains(out, fakeGHP) || out == text {
		b.Fatal("planted secrets not redacted")
	}
	loop(b, len(text), func() { _ = s.String(text) })
}

// proseText is about n bytes of plain English, none of it secret: the
// easiest input for keyword pre-filters.
func proseText(n int) string {
	const para = "Harness sits between a model and the world. The model proposes an action, " +
		"which is checked against the registry, judged by the guard and dispatched to a runtime; " +
		"the observation that comes back is normalised, and events describe each step for people " +
		"who supervise the loop and for the log that keeps a record of what happened.\n"
	return strings.Repeat(para, n/len(para)+1)[:n]
}

// BenchmarkSanitize1MiBProse is BenchmarkSanitize1MiB on plain prose.
func BenchmarkSanitize1MiBProse(b *testing.B) {
	s := newTestSanitizer(b, -1)
	text := proseText(1 << 20)
	loop(b, len(text), func() { _ = s.String(text) })
}

// BenchmarkSanitize1MiBPayload sanitizes a 1 MiB payload of 1 KiB strings
// (below the default MaxString, so all of it is scanned) through Value.
func BenchmarkSanitize1MiBPayload(b *testing.B) {
	s := newTestSanitizer(b, 0)
	text := benchText(1 << 20)
	lines := make([]any, 0, 1024)
	for i := 0; i+1024 <= len(text); i += 1024 {
		lines = append(lines, text[i:i+1024])
	}
	payload := map[string]any{"stdout": lines, "exit_code": 0.0}
	loop(b, len(text), func() { _ = s.Value(payload, nil) })
}

// BenchmarkValueSmallMap is the per-action cost: a typical action input.
func BenchmarkValueSmallMap(b *testing.B) {
	s := newTestSanitizer(b, 0)
	in := map[string]any{"path": "src/main.go", "offset": 0.0, "limit": 200.0, "query": "func main"}
	sensitive := []string{"password"}
	loop(b, 0, func() { _ = s.Value(in, sensitive) })
}

// BenchmarkValueSmallMapSecret is the same with one secret to redact.
func BenchmarkValueSmallMapSecret(b *testing.B) {
	s := newTestSanitizer(b, 0)
	in := map[string]any{"path": "src/main.go", "api_key": fakeOpenAIProj, "limit": 200.0}
	loop(b, 0, func() { _ = s.Value(in, nil) })
}

// BenchmarkSanitizeHostile feeds inputs built to make rules fire at every
// position; the scanner must stay linear (compare with 1MiB's MB/s).
func BenchmarkSanitizeHostile(b *testing.B) {
	for _, p := range []string{"eyJ", "sk-", "AKIA", "ghp_", "-----BEGIN ", "Bearer ", "://a", "a:", "xoxb-", "SG.", "password=\"\\", "  password: |\n"} {
		text := strings.Repeat(p, (256<<10)/len(p))
		b.Run(strings.TrimSpace(p), func(b *testing.B) {
			s := newTestSanitizer(b, -1)
			loop(b, len(text), func() { _ = s.String(text) })
		})
	}
}
