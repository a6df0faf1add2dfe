package policy

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
)

// The repeat checks compare actionHash, which must be the canonical hash
// (action.Action.Hash) that audit records and tokens name, for inputs
// small and wide (past the objects action sorts on the stack), shallow and
// as deep as canonical JSON goes.
func TestActionHashIsTheCanonicalHash(t *testing.T) {
	wide := map[string]any{}
	for i := range 17 { // one more key than action sorts on the stack
		wide[fmt.Sprint("k", i)] = i
	}
	deep := any("leaf")
	for range 256 - 2 { // canonical JSON nests 256 deep
		deep = []any{deep}
	}
	type point struct {
		X int `json:"x"`
	}
	for name, a := range map[string]action.Action{
		"no input":          {Name: "workspace_list_files"},
		"empty input":       {Name: "workspace_list_files", Input: map[string]any{}},
		"nested":            {Name: "mcp_call", Input: map[string]any{"server": "s", "arguments": map[string]any{"b": []any{1.0, "x", nil, true}, "a": json.Number("1e0")}}},
		"escapes":           {Name: "n\"a<me>", Input: map[string]any{"é\u2028": "\x00<", "bad utf-8": "\xff\xe2\x80x"}},
		"order-proof":       {Name: "x", Input: map[string]any{"z": 1, "a": 2}},
		"other fields":      {Name: "x", Tenant: "t", SessionID: "s", Trusted: true},
		"numbers":           {Name: "x", Input: map[string]any{"f": 0.1, "i": int64(1) << 60, "u": uint8(7), "n": json.Number("12.50"), "neg": -3.0, "big": 1e300}},
		"number edges":      {Name: "x", Input: map[string]any{"z": math.Copysign(0, -1), "m": float64(1 << 53), "m1": 1<<53 + 1, "neg": -(1 << 53) - 1, "h": 2.5, "t": true, "f": false, "n": nil, "e": 1e21}},
		"more keys":         {Name: "x", Input: wide},
		"as deep as it may": {Name: "x", Input: map[string]any{"d": deep}},
		"other types":       {Name: "x", Input: map[string]any{"argv": []string{"git", "push"}, "env": map[string]string{"A": "1"}, "p": point{3}, "raw": json.RawMessage(`{"b":1,"a":[2]}`)}},
		"keys by bytes":     {Name: "x", Input: map[string]any{"B": 1, "a": 2, "é": 3, "e": 4, "": 5, "a\x00": 6}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := a.Hash()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := actionHash(&a)
			if !ok || hex.EncodeToString(got[:]) != want {
				t.Fatalf("actionHash %x, Hash %s", got, want)
			}
		})
	}
	for name, in := range map[string]map[string]any{
		"a function":     {"f": func() {}},
		"NaN":            {"x": []any{1, math.NaN()}},
		"nested too far": {"d": []any{[]any{deep}}},
	} {
		if _, ok := actionHash(&action.Action{Name: "x", Input: in}); ok {
			t.Errorf("%s: an input without a canonical form was hashed", name)
		}
		if _, err := (action.Action{Name: "x", Input: in}).Hash(); err == nil {
			t.Errorf("%s: Hash accepts what actionHash refuses", name)
		}
	}
}

// TestActionHashTellsInputsApart: random inputs hash as action.Hash does;
// equal inputs built in another key order hash the same, and a change
// anywhere (a value, a key, the name, a value's shape) hashes differently.
func TestActionHashTellsInputsApart(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rnd.IntN(8); {
		case n == 0 && depth < 4:
			m := map[string]any{}
			for range rnd.IntN(20) {
				m[word(rnd)] = value(depth + 1)
			}
			return m
		case n == 1 && depth < 4:
			l := make([]any, rnd.IntN(4))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return l
		case n == 2:
			return float64(rnd.IntN(1000)) / 8
		case n == 3:
			return rnd.IntN(2) == 0
		case n == 4:
			return nil
		case n == 5:
			return rnd.IntN(100)
		}
		return word(rnd)
	}
	seen := map[[32]byte]string{}
	for i := range 2000 {
		in := map[string]any{}
		for range 1 + rnd.IntN(6) {
			in[word(rnd)] = value(1)
		}
		a := action.Action{Name: fmt.Sprint("act", i%3), Input: in}
		want, err := a.Hash()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := actionHash(&a)
		if !ok || hex.EncodeToString(got[:]) != want {
			t.Fatalf("%v: actionHash %x, Hash %s", a.Input, got, want)
		}
		if other, dup := seen[got]; dup && other != want {
			t.Fatalf("two inputs share a hash")
		}
		seen[got] = want

		// The same input, its keys inserted in reverse order.
		again := map[string]any{}
		keys := make([]string, 0, len(in))
		for k := range in {
			keys = append(keys, k)
		}
		for j := len(keys) - 1; j >= 0; j-- {
			again[keys[j]] = in[keys[j]]
		}
		if h, _ := actionHash(&action.Action{Name: a.Name, Input: again}); h != got {
			t.Fatalf("the same input in another order hashes differently")
		}
		for what, changed := range map[string]action.Action{
			"name":  {Name: a.Name + "x", Input: in},
			"value": {Name: a.Name, Input: with(in, keys[0], "changed")},
			"shape": {Name: a.Name, Input: with(in, keys[0], []any{in[keys[0]]})},
			"key":   {Name: a.Name, Input: with(in, keys[0]+"!", in[keys[0]])},
		} {
			if h, _ := actionHash(&changed); h == got {
				t.Fatalf("a changed %s hashes the same: %v", what, changed.Input)
			}
		}
	}
}

// TestPrintIsEqualExactlyWhenTheHashIs: MemoryCounters compares Prints
// where RedisCounters compares canonical hashes, so two actions must have
// the same Print exactly when they have the same canonical hash: inputs
// canonically equal but built of other Go values (key orders, number
// types and spellings, []string for []any, invalid UTF-8 and the U+FFFD
// it stands for) share one, and random inputs of a small alphabet, which
// often coincide, share one exactly when their hashes coincide. An input
// without a canonical form has neither.
func TestPrintIsEqualExactlyWhenTheHashIs(t *testing.T) {
	alike := [][]action.Action{
		{{Name: "x", Input: map[string]any{"a": 1, "b": "s"}}, {Name: "x", Input: map[string]any{"b": "s", "a": 1.0}}, {Name: "x", Input: map[string]any{"a": json.Number("1e0"), "b": "s"}}},
		{{Name: "x", Input: map[string]any{"argv": []string{"git", "push"}}}, {Name: "x", Input: map[string]any{"argv": []any{"git", "push"}}}, {Name: "x", Input: map[string]any{"argv": json.RawMessage(`["git","push"]`)}}},
		{{Name: "x", Input: map[string]any{"s": "a\xffb"}}, {Name: "x", Input: map[string]any{"s": "a\ufffdb"}}},
		{{Name: "x", Input: map[string]any{"u": uint8(7), "i": int64(1) << 60}}, {Name: "x", Input: map[string]any{"u": 7, "i": float64(int64(1) << 60)}}},
		{{Name: "x"}, {Name: "x", Input: nil}},
	}
	for _, group := range alike {
		first, ok := actionPrint(&group[0])
		if !ok {
			t.Fatalf("%v has no Print", group[0].Input)
		}
		for _, a := range group[1:] {
			if p, _ := actionPrint(&a); p != first {
				t.Errorf("%v and %v are canonically equal, their Prints differ", group[0].Input, a.Input)
			}
		}
	}
	for _, in := range []map[string]any{{"f": func() {}}, {"x": math.NaN()}} {
		if _, ok := actionPrint(&action.Action{Name: "x", Input: in}); ok {
			t.Errorf("%v: an input without a canonical form has a Print", in)
		}
	}

	rnd := rand.New(rand.NewPCG(3, 4))
	small := func() any {
		switch rnd.IntN(5) {
		case 0:
			return rnd.IntN(3)
		case 1:
			return float64(rnd.IntN(3))
		case 2:
			return []any{"a", rnd.IntN(2)}
		case 3:
			return nil
		}
		return []string{"", "a", "b", "\xff", "\ufffd"}[rnd.IntN(5)]
	}
	byHash := map[[32]byte]Print{}
	byPrint := map[Print][32]byte{}
	for range 5000 {
		in := map[string]any{}
		for range rnd.IntN(3) {
			in[[]string{"k", "l", "m"}[rnd.IntN(3)]] = small()
		}
		a := action.Action{Name: []string{"x", "y"}[rnd.IntN(2)], Input: in}
		h, ok1 := actionHash(&a)
		p, ok2 := actionPrint(&a)
		if !ok1 || !ok2 {
			t.Fatalf("%v: hash %v, print %v", in, ok1, ok2)
		}
		if q, seen := byHash[h]; seen && q != p {
			t.Fatalf("%v: equal hashes, Prints differ", in)
		}
		if g, seen := byPrint[p]; seen && g != h {
			t.Fatalf("%v: equal Prints, hashes differ", in)
		}
		byHash[h], byPrint[p] = p, h
	}
	if len(byHash) < 100 {
		t.Fatalf("only %d distinct actions: the test compares too little", len(byHash))
	}
}

func with(in map[string]any, k string, v any) map[string]any {
	out := map[string]any{}
	for k2, v2 := range in {
		if strings.TrimSuffix(k, "!") != k2 || !strings.HasSuffix(k, "!") {
			out[k2] = v2
		}
	}
	out[k] = v
	return out
}

func word(rnd *rand.Rand) string {
	const letters = "abcé\"\\\n<\u2028z"
	r := []rune(letters)
	var b strings.Builder
	for range rnd.IntN(6) {
		b.WriteRune(r[rnd.IntN(len(r))])
	}
	return b.String()
}

// TestSnapshotBudgetOrder: Snapshot fills ahp.Remaining by index, in the
// order of ahp.Budgets, which must name the budgets as this package does.
func TestSnapshotBudgetOrder(t *testing.T) {
	names := []string{BudgetActions, BudgetRisk, BudgetErrors, BudgetConsecutiveErrors, BudgetWall, BudgetBytesWritten}
	if len(names) != len(ahp.Budgets) {
		t.Fatalf("%d budgets here, %d in ahp.Budgets", len(names), len(ahp.Budgets))
	}
	for i, n := range names {
		if ahp.Budgets[i] != n {
			t.Errorf("ahp.Budgets[%d] is %q, the snapshot writes %q there", i, ahp.Budgets[i], n)
		}
	}
	lim := &Limits{MaxActions: 10, MaxRisk: 20, MaxErrors: 30, MaxConsecutiveErrors: 40, MaxWall: 50 * time.Second, MaxBytesWritten: 60}
	a := &Admission{limits: lim}
	a.counters = tally{Actions: 1, Risk: 2, Errors: 3, ConsecutiveErrors: 4, WallMS: 5000, BytesWritten: 6}
	got := a.Snapshot().Remaining.Map()
	want := map[string]int64{BudgetActions: 9, BudgetRisk: 18, BudgetErrors: 27, BudgetConsecutiveErrors: 36, BudgetWall: 45, BudgetBytesWritten: 54}
	if !maps.Equal(got, want) {
		t.Errorf("remaining %v, want %v", got, want)
	}
}

// TestEncodeHashIsHex: the snapshot's hash is written as hex.Encode writes
// it, for random sums and the extremes.
func TestEncodeHashIsHex(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sums := [][32]byte{{}, {0: 0xff, 31: 0x0f}}
	for range 200 {
		var s [32]byte
		for i := range s {
			s[i] = byte(rng.IntN(256))
		}
		sums = append(sums, s)
	}
	for _, s := range sums {
		var got [64]byte
		encodeHash(&got, &s)
		if want := hex.EncodeToString(s[:]); string(got[:]) != want {
			t.Fatalf("encodeHash %s, want %s", got, want)
		}
	}
}
