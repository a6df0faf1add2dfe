package sanitize

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// upperNames is a StringMapper: its only free text is its strings.
type upperNames []string

func (u upperNames) MapStrings(f func(string) string) (any, bool) {
	out, changed := make(upperNames, len(u)), false
	for i, s := range u {
		out[i] = f(s)
		changed = changed || out[i] != s
	}
	return out, changed
}

// markersIn returns the well-formed markers in s, in order.
func markersIn(s string) []string {
	var out []string
	for rest := s; ; {
		i := strings.Index(rest, MarkerPrefix)
		if i < 0 {
			return out
		}
		if m := rest[i:min(i+markerLen, len(rest))]; isMarker(m) {
			out = append(out, m)
		}
		rest = rest[i+len(MarkerPrefix):]
	}
}

// allMarkers returns the markers in every string of v, map keys included.
func allMarkers(v any) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			out = append(out, markersIn(t)...)
		case map[string]any:
			for k, e := range t {
				out = append(out, markersIn(k)...)
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]string:
			for k, e := range t {
				out = append(out, markersIn(k)...)
				out = append(out, markersIn(e)...)
			}
		case []string:
			for _, e := range t {
				out = append(out, markersIn(e)...)
			}
		case upperNames:
			walk([]string(t))
		}
	}
	walk(v)
	return out
}

// TestValueReportNamesEveryMarkerItPutsIn: ValueReport and StringReport
// give what Value and String give, and report each marker they put in
// once, through every way a value is redacted (a secret in a string, a
// key, a secret-named key, a declared path, a map of strings, a list of
// strings, bytes, a StringMapper, a value encoded to JSON), and no marker
// the value already held.
func TestValueReportNamesEveryMarkerItPutsIn(t *testing.T) {
	s := newTestSanitizer(t, -1)
	held := s.Redact("an old secret")
	type wrapped struct{ Note string }
	in := map[string]any{
		"stdout":     "x " + fakeGHP + " y " + fakeGHO,
		"earlier":    "seen: " + held,
		fakeGHU:      "a secret as a key",
		"token":      "opaque",
		"api_key":    held,
		"pin":        "1234",
		"list":       []any{"ok", fakeGHS, 3.0, map[string]any{"password": []any{1, 2}}},
		"env":        map[string]string{"SECRET": "s3", "HOME": "/home/" + fakeGHR},
		"argv":       []string{"echo", fakeGHP},
		"raw":        []byte("b " + fakeGHO),
		"names":      upperNames{"n " + fakeGHU, "plain"},
		"struct":     wrapped{Note: "w " + fakeGHS},
		"clean":      "nothing",
		"clean-list": []string{"a", "b"},
	}
	var reported []string
	got := s.ValueReport(in, []string{"pin"}, func(m string) { reported = append(reported, m) })
	if want := s.Value(in, []string{"pin"}); !reflect.DeepEqual(got, want) {
		t.Fatalf("ValueReport gave\n%v\nValue gave\n%v", got, want)
	}
	wantMarkers := allMarkers(got)
	wantMarkers = slices.DeleteFunc(wantMarkers, func(m string) bool { return m == held })
	if len(wantMarkers) != 13 {
		t.Fatalf("the test redacts %d values, meant 13: %v", len(wantMarkers), got)
	}
	slices.Sort(wantMarkers)
	slices.Sort(reported)
	if !slices.Equal(reported, wantMarkers) {
		t.Errorf("reported %d markers\n%v\nput in %d\n%v", len(reported), reported, len(wantMarkers), wantMarkers)
	}

	reported = nil
	msg := "failed with " + fakeGHP + " after " + held
	if out := s.StringReport(msg, func(m string) { reported = append(reported, m) }); out != s.String(msg) {
		t.Errorf("StringReport %q, String %q", out, s.String(msg))
	}
	if !slices.Equal(reported, []string{s.Redact(fakeGHP)}) {
		t.Errorf("StringReport reported %v", reported)
	}
	s.StringReport("clean", func(m string) { t.Errorf("a clean string reported %s", m) })
}
