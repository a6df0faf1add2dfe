package action

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func decode(t testing.TB, s string, useNumber bool) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	if useNumber {
		dec.UseNumber()
	}
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

func TestHashSameForEquivalentJSON(t *testing.T) {
	cases := []struct {
		name string
		a, b string
	}{
		{"key order", `{"path":"a","limit":3}`, `{"limit":3,"path":"a"}`},
		{"whitespace", `{"path":"a","x":[1,2]}`, "{ \"path\" : \"a\",\n \"x\" : [ 1 , 2 ] }"},
		{"number spellings", `{"n":1}`, `{"n":1.0}`},
		{"exponent", `{"n":100}`, `{"n":1e2}`},
		{"nested order", `{"o":{"b":1,"a":{"d":2,"c":3}}}`, `{"o":{"a":{"c":3,"d":2},"b":1}}`},
		{"unicode escapes", `{"s":"é"}`, `{"s":"\u00e9"}`},
		{"slash escape", `{"s":"a/b"}`, `{"s":"a\/b"}`},
		{"big integer", `{"n":12345678901234567}`, `{"n":12345678901234567}`},
		{"fraction", `{"n":0.5}`, `{"n":5e-1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, useNumber := range []bool{false, true} {
				ha, err := Action{Name: "x", Input: decode(t, tc.a, useNumber)}.Hash()
				if err != nil {
					t.Fatal(err)
				}
				hb, err := Action{Name: "x", Input: decode(t, tc.b, !useNumber)}.Hash()
				if err != nil {
					t.Fatal(err)
				}
				if ha != hb {
					t.Fatalf("hash differs (useNumber=%v): %s vs %s", useNumber, ha, hb)
				}
			}
		})
	}
}

func TestHashDiffersForDifferentActions(t *testing.T) {
	base := Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "a.txt", "content": "x"}}
	h0, _ := base.Hash()
	others := map[string]Action{
		"name":          {Name: "workspace_propose_patch", Input: base.Input},
		"value":         {Name: base.Name, Input: map[string]any{"path": "a.txt", "content": "y"}},
		"key":           {Name: base.Name, Input: map[string]any{"path": "b.txt", "content": "x"}},
		"extra key":     {Name: base.Name, Input: map[string]any{"path": "a.txt", "content": "x", "z": nil}},
		"type":          {Name: base.Name, Input: map[string]any{"path": "a.txt", "content": 1}},
		"number vs str": {Name: "n", Input: map[string]any{"v": "1"}},
	}
	seen := map[string]string{h0: "base"}
	for name, a := range others {
		h, err := a.Hash()
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[h]; dup {
			t.Errorf("%s hashes like %s", name, prev)
		}
		seen[h] = name
	}
}

func TestHashIgnoresIdentityFields(t *testing.T) {
	a := Action{Name: "x", Input: map[string]any{"k": "v"}}
	b := a
	b.Tenant, b.SessionID, b.TaskID, b.StepID, b.Trusted, b.ID = "t", "s", "k", "1", true, "id"
	ha, _ := a.Hash()
	hb, _ := b.Hash()
	if ha != hb {
		t.Fatal("identity fields changed the action hash")
	}
}

func TestHashStableAcrossProcesses(t *testing.T) {
	// A fixed vector: if this changes, tokens minted by an older build no
	// longer redeem on a newer one.
	h, err := Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt", "limit": 2}}.Hash()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Canonical(map[string]any{"name": "workspace_read_file", "input": map[string]any{"path": "a.txt", "limit": 2}})
	if string(b) != `{"input":{"limit":2,"path":"a.txt"},"name":"workspace_read_file"}` {
		t.Fatalf("canonical form changed: %s", b)
	}
	const want = "f96cc41bf5bbcdc5c06bc441fa94f3be3b288d46e581b25a068b12a8e8584d6a"
	if h != want {
		t.Fatalf("hash = %s, want %s", h, want)
	}
}

func TestCanonicalRefusesNaN(t *testing.T) {
	nan := 0.0
	nan = nan / nan
	if _, err := Canonical(map[string]any{"x": nan}); err == nil {
		t.Fatal("NaN accepted")
	}
}

func TestCanonicalGoValues(t *testing.T) {
	type point struct {
		X int    `json:"x"`
		Y string `json:"y"`
	}
	got, err := Canonical(map[string]any{"p": point{1, "<a>"}, "s": []string{"b", "a"}, "i": int64(-3), "u": uint8(7), "f": float32(0.5)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"f":0.5,"i":-3,"p":{"x":1,"y":"<a>"},"s":["b","a"],"u":7}`
	if string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestErrorCodes(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Errorf(CodeNotFound, "no file %s", "a"))
	if CodeOf(err) != CodeNotFound {
		t.Fatalf("CodeOf = %q", CodeOf(err))
	}
	if !errors.Is(err, &Error{Code: CodeNotFound}) {
		t.Fatal("errors.Is with a code sentinel failed")
	}
	if errors.Is(err, &Error{Code: CodeTimeout}) {
		t.Fatal("errors.Is matched another code")
	}
	if MessageOf(err) != "no file a" {
		t.Fatalf("MessageOf = %q", MessageOf(err))
	}
	if CodeOf(errors.New("plain")) != CodeInternal || CodeOf(nil) != CodeNone {
		t.Fatal("CodeOf of plain/nil errors")
	}
}

// FuzzCanonicalHash checks that equivalent JSON documents hash equally:
// the same document decoded with and without UseNumber, re-indented, and
// re-encoded from its decoded form.
func FuzzCanonicalHash(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"b":[1,2.5,"x"],"a":{"c":null}}`, `{"n":1e300}`, `{"s":"\u2028<>&"}`, `{"n":-0}`, `{"n":9007199254740993}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var plain map[string]any
		if json.Unmarshal(data, &plain) != nil {
			return
		}
		num := decode(t, string(data), true)
		h1, err1 := Action{Name: "f", Input: plain}.Hash()
		h2, err2 := Action{Name: "f", Input: num}.Hash()
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		if h1 != h2 {
			t.Fatalf("UseNumber changed the hash of %s", data)
		}
		var indented bytes.Buffer
		if json.Indent(&indented, data, "", "  ") == nil {
			if h3, _ := (Action{Name: "f", Input: decode(t, indented.String(), false)}).Hash(); h3 != h1 {
				t.Fatalf("indentation changed the hash of %s", data)
			}
		}
		re, err := json.Marshal(plain)
		if err != nil {
			return
		}
		var again map[string]any
		if json.Unmarshal(re, &again) != nil {
			t.Fatalf("re-encoded form does not decode: %s", re)
		}
		if h4, _ := (Action{Name: "f", Input: again}).Hash(); h4 != h1 {
			t.Fatalf("re-encoding changed the hash of %s", data)
		}
		c, _ := Canonical(plain)
		var back map[string]any
		if err := json.Unmarshal(c, &back); err != nil {
			t.Fatalf("canonical form is not JSON: %s", c)
		}
	})
}

// referenceJSONString is the plain rune-by-rune form of AppendJSONString,
// kept as its oracle: the canonical form (and so every audit hash) must not
// change when the fast path does.
func referenceJSONString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", "a\"b\\c", "tab\tnl\ncr\r", "\x00\x01\x08\x0c\x1f\x7f", "é日本\U0001F600",
		"bad\xffbyte", "\xe2\x80", "line\u2028para\u2029", "\ufffd", strings.Repeat("x", 70) + "\n"} {
		got := string(AppendJSONString([]byte("prefix:"), s))
		if want := "prefix:" + referenceJSONString(s); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal([]byte(got[len("prefix:"):]), &back); err != nil || back != string([]rune(s)) {
			t.Errorf("%q: decodes to %q (%v), want %q", s, back, err, string([]rune(s)))
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"\\\n", "bad\xff", "\u2028", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendJSONString(nil, s)), referenceJSONString(s); got != want {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got, want)
		}
	})
}

func BenchmarkAppendJSONString64KiB(b *testing.B) {
	s := strings.Repeat(strings.Repeat("x", 63)+"\n", 1024)
	buf := make([]byte, 0, 80<<10)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = AppendJSONString(buf[:0], s)
	}
}
