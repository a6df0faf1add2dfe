//go:build gitleaks

package sanitize

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/zricethezav/gitleaks/v8/detect"
)

// DeepScanner adds gitleaks' full rule set (about 220 rules with keyword
// pre-filters, entropy thresholds and allowlists) to a Sanitizer's own
// rules. It is an opt-in deep scan for sinks that can afford it (an export,
// a nightly audit sweep): at about 12 µs per KiB it is far too slow for
// every event. It is compiled only with the build tag "gitleaks", which
// needs github.com/zricethezav/gitleaks/v8 (v8.30.1 tested) in go.mod.
//
// Each gitleaks finding's secret is replaced, everywhere it occurs, by its
// marker before the Sanitizer's own pass; gitleaks' allowlists apply, so it
// finds nothing the default configuration deliberately ignores (such as
// keys containing "EXAMPLE"). It is safe for concurrent use.
type DeepScanner struct {
	s *Sanitizer
	d *detect.Detector
}

// NewDeepScanner returns a DeepScanner that redacts with s.
func NewDeepScanner(s *Sanitizer) (*DeepScanner, error) {
	d, err := detect.NewDetectorDefaultConfig()
	if err != nil {
		return nil, fmt.Errorf("new deep scanner: gitleaks default config: %w", err)
	}
	return &DeepScanner{s: s, d: d}, nil
}

// Secrets returns the distinct secrets gitleaks finds in str, longest
// first.
func (ds *DeepScanner) Secrets(str string) []string {
	var out []string
	for _, f := range ds.d.DetectString(str) {
		if f.Secret != "" && !slices.Contains(out, f.Secret) {
			out = append(out, f.Secret)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}

// String is Sanitizer.String after replacing every secret gitleaks finds
// in str. When a secret was replaced and the string is then cut, the
// length noted is that of the string after replacement.
func (ds *DeepScanner) String(str string) string {
	return ds.s.String(ds.replace(str))
}

// Value is Sanitizer.Value after replacing, in every string of v (map keys
// included), the secrets gitleaks finds there.
func (ds *DeepScanner) Value(v any, sensitive []string) any {
	return ds.s.Value(ds.walk(v), sensitive)
}

func (ds *DeepScanner) replace(str string) string {
	for _, secret := range ds.Secrets(str) {
		str = strings.ReplaceAll(str, secret, ds.s.Redact(secret))
	}
	return str
}

// walk copies the containers Value understands, replacing gitleaks
// findings in their strings; other values are left to Value.
func (ds *DeepScanner) walk(v any) any {
	switch t := v.(type) {
	case string:
		return ds.replace(t)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[ds.replace(k)] = ds.walk(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = ds.walk(e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(t))
		for k, e := range t {
			out[ds.replace(k)] = ds.replace(e)
		}
		return out
	case []string:
		out := make([]string, len(t))
		for i, e := range t {
			out[i] = ds.replace(e)
		}
		return out
	case []byte:
		return ds.replace(string(t))
	}
	return v
}
