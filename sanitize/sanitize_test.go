package sanitize

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
)

var testKey = bytes.Repeat([]byte{0x5a}, 32)

func newTestSanitizer(t testing.TB, maxString int) *Sanitizer {
	t.Helper()
	s, err := New(Options{Key: testKey, MaxString: maxString})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRejectsShortKey(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
		ok   bool
	}{
		{"nil key", nil, false},
		{"15 bytes", make([]byte, 15), false},
		{"16 bytes", make([]byte, 16), true},
		{"32 bytes", make([]byte, 32), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Options{Key: tc.key})
			if tc.ok != (err == nil) {
				t.Fatalf("New: err = %v, want ok=%v", err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, ErrKeyTooShort) {
				t.Errorf("err = %v, want ErrKeyTooShort", err)
			}
			if tc.ok && s == nil {
				t.Error("nil sanitizer")
			}
		})
	}
}

func TestRedact(t *testing.T) {
	s := newTestSanitizer(t, 0)
	other, err := New(Options{Key: bytes.Repeat([]byte{1}, 16)})
	if err != nil {
		t.Fatal(err)
	}
	// HMAC-SHA256(key = 32 x 0x5a, "hunter2"), computed independently with
	// Python's hmac module.
	const want = "hmac-sha256:" + wantHunter2
	cases := []struct {
		name string
		got  string
		want string
	}{
		{"known vector", s.Redact("hunter2"), want},
		{"deterministic", s.Redact("hunter2"), s.Redact("hunter2")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %q, want %q", tc.got, tc.want)
			}
		})
	}
	t.Run("different secrets differ", func(t *testing.T) {
		if s.Redact("a") == s.Redact("b") {
			t.Error("equal markers for different secrets")
		}
	})
	t.Run("different keys differ", func(t *testing.T) {
		if s.Redact("hunter2") == other.Redact("hunter2") {
			t.Error("equal markers under different keys")
		}
	})
	t.Run("marker shape", func(t *testing.T) {
		if m := s.Redact(""); !isMarker(m) {
			t.Errorf("%q is not a marker", m)
		}
	})
}

func TestStringTruncates(t *testing.T) {
	s := newTestSanitizer(t, 16)
	cases := []struct {
		name, in, want string
	}{
		{"short stays", "hello", "hello"},
		{"exact length stays", "0123456789abcdef", "0123456789abcdef"},
		{"long is cut", "0123456789abcdefXYZ", "0123456789abcdef…[truncated, 19 bytes]"},
		{"cut on rune boundary", "0123456789abcdeé!", "0123456789abcde…[truncated, 18 bytes]"},
		{"secret across the cut is redacted whole", "0123456789 " + fakeGHP, "0123456789 " + "M…[truncated, 51 bytes]"},
		{"secret after the cut is dropped", "0123456789abcdef " + fakeGHP, "0123456789abcdef…[truncated, 57 bytes]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := strings.Replace(tc.want, "M…", s.Redact(fakeGHP)+"…", 1)
			if got := s.String(tc.in); got != want {
				t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, want)
			}
		})
	}
}

func TestStringDefaultMaxString(t *testing.T) {
	s := newTestSanitizer(t, 0)
	in := strings.Repeat("a", DefaultMaxString+1)
	want := strings.Repeat("a", DefaultMaxString) + "…[truncated, 2049 bytes]"
	if got := s.String(in); got != want {
		t.Errorf("got %d bytes %q…, want %q…", len(got), got[len(got)-30:], want[len(want)-30:])
	}
	unlimited := newTestSanitizer(t, -1)
	if got := unlimited.String(in); got != in {
		t.Error("negative MaxString truncated")
	}
}

// TestStringIsIdempotent: sanitizing sanitized text changes nothing, so a
// sink that sanitizes again does not hash the markers.
func TestStringIsIdempotent(t *testing.T) {
	s := newTestSanitizer(t, -1)
	for _, tc := range secretCases() {
		t.Run(tc.name, func(t *testing.T) {
			once := s.String(tc.text)
			if twice := s.String(once); twice != once {
				t.Errorf("second pass changed the text:\n once: %q\ntwice: %q", once, twice)
			}
		})
	}
}

func TestStringTruncationIsIdempotent(t *testing.T) {
	s := newTestSanitizer(t, 16)
	cases := []struct{ name, in string }{
		{"plain", strings.Repeat("a", 100)},
		{"with secret", "k " + fakeGHP + strings.Repeat("a", 100)},
		{"multibyte", strings.Repeat("é", 50)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			once := s.String(tc.in)
			if twice := s.String(once); twice != once {
				t.Errorf("second pass changed the text:\n once: %q\ntwice: %q", once, twice)
			}
		})
	}
	t.Run("forged markers do not lift the limit", func(t *testing.T) {
		in := strings.Repeat(s.Redact("x"), 40) + "…[truncated, 5 bytes]"
		if got := s.String(in); len(got) >= len(in) {
			t.Errorf("not cut: %d bytes", len(got))
		}
	})
	t.Run("a fake note is still cut", func(t *testing.T) {
		in := strings.Repeat("a", 40) + "…[truncated, 5 bytes]"
		if got := s.String(in); got == in {
			t.Errorf("not cut: %q", got)
		}
	})
}

func TestStringDoesNotCopyCleanStrings(t *testing.T) {
	s := newTestSanitizer(t, 0)
	in := "src/main.go: package main"
	allocs := testing.AllocsPerRun(100, func() { _ = s.String(in) })
	if allocs != 0 {
		t.Errorf("String on a clean string allocates %v times", allocs)
	}
}

func TestValue(t *testing.T) {
	s := newTestSanitizer(t, 64)
	r := s.Redact
	long := strings.Repeat("x", 80)
	cases := []struct {
		name      string
		in        any
		sensitive []string
		want      any
	}{
		{"nil", nil, nil, nil},
		{"number", 3.5, nil, 3.5},
		{"bool", true, nil, true},
		{"clean string", "hello", nil, "hello"},
		{"secret string", "k " + fakeGHP, nil, "k " + r(fakeGHP)},
		{"long string", long, nil, strings.Repeat("x", 64) + "…[truncated, 80 bytes]"},
		{
			"declared sensitive field", map[string]any{"pin": "1234", "path": "a.go"}, []string{"pin"},
			map[string]any{"pin": r("1234"), "path": "a.go"},
		},
		{
			"declared path is case-insensitive", map[string]any{"Headers": map[string]any{"X-Auth-Code": "abc", "Accept": "*/*"}}, []string{"headers.x-auth-code"},
			map[string]any{"Headers": map[string]any{"X-Auth-Code": r("abc"), "Accept": "*/*"}},
		},
		{
			"declared path through an array", map[string]any{"users": []any{map[string]any{"pin": "1"}, map[string]any{"pin": "2"}}}, []string{"users.pin"},
			map[string]any{"users": []any{map[string]any{"pin": r("1")}, map[string]any{"pin": r("2")}}},
		},
		{
			"wildcard segment", map[string]any{"a": map[string]any{"pin": "1"}, "b": map[string]any{"pin": "2"}}, []string{"*.pin"},
			map[string]any{"a": map[string]any{"pin": r("1")}, "b": map[string]any{"pin": r("2")}},
		},
		{
			"path does not match other depths", map[string]any{"pin": "1", "x": map[string]any{"pin": "2"}}, []string{"x.pin"},
			map[string]any{"pin": "1", "x": map[string]any{"pin": r("2")}},
		},
		{
			"obviously secret names", map[string]any{
				"password": "p", "DB_PASSWORD": "p", "apiKey": "k", "x-api-key": "k", "access_token": "t",
				"Authorization": "Basic abc", "Cookie": "a=b", "credentials": map[string]any{"u": "x"},
				"AWS_SECRET_ACCESS_KEY": "s", "client_secret": "s", "private_key": "k",
			}, nil,
			map[string]any{
				"password": r("p"), "DB_PASSWORD": r("p"), "apiKey": r("k"), "x-api-key": r("k"), "access_token": r("t"),
				"Authorization": r("Basic abc"), "Cookie": r("a=b"), "credentials": r(`{"u":"x"}`),
				"AWS_SECRET_ACCESS_KEY": r("s"), "client_secret": r("s"), "private_key": r("k"),
			},
		},
		{
			"ordinary names stay", map[string]any{"max_tokens": 100.0, "token_count": 3.0, "author": "ann", "public_key": "ssh-ed25519 AAAA", "key": "k"}, nil,
			map[string]any{"max_tokens": 100.0, "token_count": 3.0, "author": "ann", "public_key": "ssh-ed25519 AAAA", "key": "k"},
		},
		{"non-string secret value", map[string]any{"password": 1234.0}, nil, map[string]any{"password": r("1234")}},
		{"nil secret value stays nil", map[string]any{"password": nil}, nil, map[string]any{"password": nil}},
		{"marker value is kept", map[string]any{"password": r("p")}, nil, map[string]any{"password": r("p")}},
		{"secret in a map key", map[string]any{fakeGHP: 1.0}, nil, map[string]any{r(fakeGHP): 1.0}},
		{"string slice", []string{"a", fakeStripeLive}, nil, []string{"a", r(fakeStripeLive)}},
		{
			"string map", map[string]string{"Authorization": "Bearer x", "Accept": "text/plain"}, nil,
			map[string]string{"Authorization": r("Bearer x"), "Accept": "text/plain"},
		},
		{"bytes are text", []byte("k=" + fakeNPM), nil, "k=" + r(fakeNPM)},
		{
			"other types go through JSON", struct {
				Name  string `json:"name"`
				Token string `json:"token"`
			}{"n", "t"}, nil,
			map[string]any{"name": "n", "token": r("t")},
		},
		{"unencodable type", make(chan int), nil, "[unencodable chan int]"},
		{
			"http header", http.Header{"Authorization": {"Bearer abc"}, "Accept": {"*/*"}}, nil,
			map[string]any{"Authorization": r(`["Bearer abc"]`), "Accept": []any{"*/*"}},
		},
		{"slack bot token", "t=" + fakeSlackBot, nil, "t=" + r(fakeSlackBot)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := s.Value(tc.in, tc.sensitive)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Value(%#v, %q)\n got %#v\nwant %#v", tc.in, tc.sensitive, got, tc.want)
			}
		})
	}
}

// TestValueIsADeepCopy: changing the result never changes the input.
func TestValueIsADeepCopy(t *testing.T) {
	s := newTestSanitizer(t, 0)
	in := map[string]any{"a": map[string]any{"b": []any{"c"}}, "s": []string{"x"}, "m": map[string]string{"k": "v"}}
	out := s.Value(in, nil).(map[string]any)
	out["a"].(map[string]any)["b"].([]any)[0] = "changed"
	out["s"].([]string)[0] = "changed"
	out["m"].(map[string]string)["k"] = "changed"
	out["new"] = 1
	want := map[string]any{"a": map[string]any{"b": []any{"c"}}, "s": []string{"x"}, "m": map[string]string{"k": "v"}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("input changed: %#v", in)
	}
}

func TestValueSmallMapAllocations(t *testing.T) {
	s := newTestSanitizer(t, 0)
	in := map[string]any{"path": "src/main.go", "offset": 0.0, "limit": 200.0, "recursive": false}
	allocs := testing.AllocsPerRun(200, func() { _ = s.Value(in, []string{"password"}) })
	// One map; the strings are shared.
	if allocs > 2 {
		t.Errorf("Value on a small clean map allocates %v times, want <= 2", allocs)
	}
}

const wantHunter2 = "133d27aabea07d9511a77ea84cc74af7d522d90a7f4ae044239921f61be39506"

// TestSanitizerIsSafeForConcurrentUse runs under -race in CI: the HMAC
// pool and the scanner state must not be shared between calls.
func TestSanitizerIsSafeForConcurrentUse(t *testing.T) {
	s := newTestSanitizer(t, 0)
	in := map[string]any{"cmd": "curl -H 'Authorization: Bearer " + fakeBearer + "'", "password": "p"}
	want := s.Value(in, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if got := s.Value(in, nil); !reflect.DeepEqual(got, want) {
					errs <- fmt.Sprintf("got %v, want %v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
