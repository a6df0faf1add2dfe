//go:build gitleaks

package sanitize

import (
	"strings"
	"testing"
)

func newDeep(t testing.TB) *DeepScanner {
	t.Helper()
	ds, err := NewDeepScanner(newTestSanitizer(t, -1))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// fakeCloudflareGlobal is a secret only gitleaks finds: a Cloudflare
// global API key (37 hex) is recognised by the word "cloudflare" before
// it ("cloudflare-global-api-key"), which is not a secret-looking name.
const fakeCloudflareGlobal = "3f1a9c0e7b2d4a6c8e5f0b1d3a7c9e2f4b6d8"

func TestDeepScannerFindsWhatTheHotPathMisses(t *testing.T) {
	ds := newDeep(t)
	in := `cloudflare: "` + fakeCloudflareGlobal + `"`
	if ds.s.ContainsSecret(in) {
		t.Fatal("the hot path already knows this shape; pick another for the test")
	}
	cases := []struct {
		name string
		got  string
	}{
		{"String", ds.String(in)},
		{"Value", ds.Value(map[string]any{"log": []any{in}}, nil).(map[string]any)["log"].([]any)[0].(string)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.got, fakeCloudflareGlobal) {
				t.Errorf("secret survived: %q", tc.got)
			}
			if !strings.Contains(tc.got, ds.s.Redact(fakeCloudflareGlobal)) {
				t.Errorf("no marker: %q", tc.got)
			}
		})
	}
}

func TestDeepScannerKeepsHotPathGuarantees(t *testing.T) {
	ds := newDeep(t)
	for _, tc := range secretCases() {
		t.Run(tc.name, func(t *testing.T) {
			if out := ds.String(tc.text); strings.Contains(out, tc.secret) {
				t.Errorf("secret survived: %q", out)
			}
		})
	}
}

// BenchmarkGitleaks1MiB is gitleaks alone on the 1 MiB text of
// BenchmarkSanitize1MiB.
func BenchmarkGitleaks1MiB(b *testing.B) {
	ds := newDeep(b)
	text := benchText(1 << 20)
	loop(b, len(text), func() { _ = ds.d.DetectString(text) })
}

// BenchmarkGitleaks1MiBProse is gitleaks alone on plain prose.
func BenchmarkGitleaks1MiBProse(b *testing.B) {
	ds := newDeep(b)
	text := proseText(1 << 20)
	loop(b, len(text), func() { _ = ds.d.DetectString(text) })
}

// BenchmarkGitleaks1MiBPayload is gitleaks on the same MiB as 1 KiB strings,
// the shape of a payload (one DetectString per string).
func BenchmarkGitleaks1MiBPayload(b *testing.B) {
	ds := newDeep(b)
	text := benchText(1 << 20)
	loop(b, len(text), func() {
		for i := 0; i+1024 <= len(text); i += 1024 {
			_ = ds.d.DetectString(text[i : i+1024])
		}
	})
}

// BenchmarkDeepScan1MiB is the whole deep scan: gitleaks, then our rules.
func BenchmarkDeepScan1MiB(b *testing.B) {
	ds := newDeep(b)
	text := benchText(1 << 20)
	loop(b, len(text), func() { _ = ds.String(text) })
}

// BenchmarkGitleaksSmallMap is the per-action cost gitleaks would add.
func BenchmarkGitleaksSmallMap(b *testing.B) {
	ds := newDeep(b)
	in := map[string]any{"path": "src/main.go", "offset": 0.0, "limit": 200.0, "query": "func main"}
	loop(b, 0, func() { _ = ds.Value(in, nil) })
}
