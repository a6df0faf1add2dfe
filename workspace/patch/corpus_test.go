package patch_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/harness-runtime/harness/workspace/patch"
	"github.com/harness-runtime/harness/workspace/patch/internal/corpus"
)

const corpusSize = 220

func loadCorpus(t testing.TB) []corpus.Case {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cases, err := corpus.Build(ctx, corpusSize, 42)
	if errors.Is(err, corpus.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return cases
}

var headerNumRE = regexp.MustCompile(`^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@`)

// perturbations model the mistakes models make in diffs.
var perturbations = []struct {
	name string
	fn   func(diff string, rng *rand.Rand) string
}{
	{"exact", func(d string, _ *rand.Rand) string { return d }},
	{"shifted-lines", func(d string, rng *rand.Rand) string {
		k := 3 + rng.IntN(18)
		if rng.IntN(2) == 0 {
			k = -k
		}
		return mapLines(d, func(l string) string {
			m := headerNumRE.FindStringSubmatch(l)
			if m == nil {
				return l
			}
			o, _ := strconv.Atoi(m[1])
			n, _ := strconv.Atoi(m[3])
			return fmt.Sprintf("@@ -%d%s +%d%s @@", max(1, o+k), m[2], max(1, n+k), m[4]) + l[len(m[0]):]
		})
	}},
	{"context-trailing-ws-stripped", func(d string, _ *rand.Rand) string {
		return mapLines(d, func(l string) string {
			if strings.HasPrefix(l, " ") {
				return strings.TrimRight(l, " \t")
			}
			return l
		})
	}},
	{"no-line-numbers", func(d string, _ *rand.Rand) string {
		return mapLines(d, func(l string) string {
			if strings.HasPrefix(l, "@@ ") {
				return "@@ @@"
			}
			return l
		})
	}},
	{"wrong-path-prefixes", func(d string, rng *rand.Rand) string {
		style := rng.IntN(3)
		return mapLines(d, func(l string) string {
			switch {
			case strings.HasPrefix(l, "--- a/"):
				if style == 1 {
					return "--- b/" + l[6:]
				}
				return "--- " + l[6:]
			case strings.HasPrefix(l, "+++ b/"):
				if style == 2 {
					return "+++ " + l[6:]
				}
				if style == 1 {
					return "+++ a/" + l[6:]
				}
				return "+++ " + l[6:]
			}
			return l
		})
	}},
}

func init() {
	byName := map[string]func(string, *rand.Rand) string{}
	for _, p := range perturbations {
		byName[p.name] = p.fn
	}
	perturbations = append(perturbations,
		struct {
			name string
			fn   func(diff string, rng *rand.Rand) string
		}{"context-tabs-as-4-spaces", func(d string, _ *rand.Rand) string {
			return mapLines(d, func(l string) string {
				if len(l) > 0 && (l[0] == ' ' || l[0] == '-') && !strings.HasPrefix(l, "--- ") {
					return l[:1] + tabsToSpaces(l[1:])
				}
				return l
			})
		}},
		struct {
			name string
			fn   func(diff string, rng *rand.Rand) string
		}{"all-tabs-as-4-spaces", func(d string, _ *rand.Rand) string {
			return mapLines(d, func(l string) string {
				if len(l) > 0 && (l[0] == ' ' || l[0] == '-' || l[0] == '+') && !strings.HasPrefix(l, "--- ") && !strings.HasPrefix(l, "+++ ") {
					return l[:1] + tabsToSpaces(l[1:])
				}
				return l
			})
		}},
		struct {
			name string
			fn   func(diff string, rng *rand.Rand) string
		}{"one-context-line-altered", func(d string, rng *rand.Rand) string {
			// In each hunk, the first context line with text gets a typo.
			done := false
			return mapLines(d, func(l string) string {
				switch {
				case strings.HasPrefix(l, "@@"):
					done = false
				case !done && strings.HasPrefix(l, " ") && len(strings.TrimSpace(l)) > 8:
					done = true
					k := len(l) - 1 - rng.IntN(3)
					return l[:k] + "~" + l[k+1:]
				}
				return l
			})
		}},
		struct {
			name string
			fn   func(diff string, rng *rand.Rand) string
		}{"shifted-per-hunk", func(d string, rng *rand.Rand) string {
			// Each hunk off by its own amount, 1 to 24 lines either way.
			return shiftHunks(d, func(int) int {
				k := 1 + rng.IntN(24)
				if rng.IntN(2) == 0 {
					k = -k
				}
				return k
			})
		}},
		struct {
			name string
			fn   func(diff string, rng *rand.Rand) string
		}{"shifted-19-then-4", func(d string, rng *rand.Rand) string {
			// Issue 14's shape: the first hunk off by 19, the others by 4,
			// all late or all early.
			sign := 1 - 2*rng.IntN(2)
			return shiftHunks(d, func(i int) int {
				if i == 0 {
					return 19 * sign
				}
				return 4 * sign
			})
		}},
		struct {
			name string
			fn   func(diff string, rng *rand.Rand) string
		}{"all-at-once", func(d string, rng *rand.Rand) string {
			return byName["wrong-path-prefixes"](byName["context-trailing-ws-stripped"](byName["shifted-lines"](d, rng), rng), rng)
		}},
	)
}

// shiftHunks moves both numbers of hunk i (0-based) by by(i) lines.
func shiftHunks(d string, by func(i int) int) string {
	i := 0
	return mapLines(d, func(l string) string {
		m := headerNumRE.FindStringSubmatch(l)
		if m == nil {
			return l
		}
		k := by(i)
		i++
		o, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[3])
		return fmt.Sprintf("@@ -%d%s +%d%s @@", max(1, o+k), m[2], max(1, n+k), m[4]) + l[len(m[0]):]
	})
}

func tabsToSpaces(body string) string {
	ws := body[:len(body)-len(strings.TrimLeft(body, "\t"))]
	return strings.Repeat("    ", len(ws)) + body[len(ws):]
}

// sameIgnoringIndent compares two files line by line without leading
// whitespace: for patches whose added lines are indented differently from
// the file, where only the placement can be right or wrong.
func sameIgnoringIndent(a, b []byte) bool {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		if strings.TrimLeft(la[i], " \t") != strings.TrimLeft(lb[i], " \t") {
			return false
		}
	}
	return true
}

func mapLines(d string, fn func(string) string) string {
	lines := strings.Split(d, "\n")
	for i, l := range lines {
		lines[i] = fn(l)
	}
	return strings.Join(lines, "\n")
}

// corpusFS answers Resolve's stat for a tree that holds the corpus files.
func corpusFS(cases []corpus.Case) func(string) patch.Kind {
	kinds := map[string]patch.Kind{}
	for _, c := range cases {
		kinds[c.Name] = patch.Regular
		for d := path.Dir(c.Name); d != "."; d = path.Dir(d) {
			kinds[d] = patch.Dir
		}
	}
	return func(name string) patch.Kind { return kinds[name] }
}

type tally struct{ ok, ambiguous, refused, wrong, indentKept int }

func applyCase(c corpus.Case, diff string, stat func(string) patch.Kind, opts patch.Options) (got []byte, err error) {
	p, err := patch.Parse(diff)
	if err != nil {
		return nil, err
	}
	if err := patch.Resolve(p, -1, stat); err != nil {
		return nil, err
	}
	if len(p.Files) != 1 || p.Files[0].Path != c.Name {
		return nil, fmt.Errorf("resolved %d files, first %q", len(p.Files), p.Files[0].Path)
	}
	r, err := patch.Apply(c.Old, p.Files[0].Hunks, opts)
	if err != nil {
		return nil, err
	}
	return r.Content, nil
}

type variant struct {
	name string
	fn   func(string, *rand.Rand) string
	opts patch.Options
}

func corpusVariants() []variant {
	var variants []variant
	for _, pt := range perturbations {
		variants = append(variants, variant{pt.name, pt.fn, patch.Options{}})
	}
	return append(variants, variant{"exact+trust-line-numbers", perturbations[0].fn, patch.Options{TrustLineNumbers: true}})
}

// runCorpus applies every variant of every case and returns the tallies,
// in the order of variants, and the table that shows them.
func runCorpus(t *testing.T, cases []corpus.Case, variants []variant) ([]tally, string) {
	stat := corpusFS(cases)
	tallies := make([]tally, len(variants))
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "variant\tapplied\t%%\tambiguous\trefused\twrong\t\n")
	for k, v := range variants {
		tl := &tallies[k]
		for i, c := range cases {
			rng := rand.New(rand.NewPCG(7, uint64(i)))
			got, err := applyCase(c, v.fn(c.Diff, rng), stat, v.opts)
			switch {
			case errors.Is(err, patch.ErrAmbiguous):
				tl.ambiguous++
			case err != nil:
				tl.refused++
				t.Logf("%s %s: refused: %v", v.name, c.Name, err)
			case strings.HasPrefix(v.name, "all-tabs") && !bytes.Equal(got, c.New) && sameIgnoringIndent(got, c.New):
				tl.ok++ // the model's own indentation was kept for lines the hunk gave no evidence about
				tl.indentKept++
			case !bytes.Equal(got, c.New):
				tl.wrong++
				t.Errorf("%s %s: WRONG result", v.name, c.Name)
			default:
				tl.ok++
			}
		}
		note := ""
		if tl.indentKept > 0 {
			note = fmt.Sprintf("%d keep the patch's own indentation of added lines", tl.indentKept)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.1f\t%d\t%d\t%d\t %s\n", v.name, tl.ok, len(cases), 100*float64(tl.ok)/float64(len(cases)), tl.ambiguous, tl.refused, tl.wrong, note)
	}
	tw.Flush()
	return tallies, table.String()
}

// TestCorpusGoSource applies diff -u output for random edits of Go source
// files, exact and perturbed the way models perturb them. It requires no
// result that differs from the intended file in any variant, every exact
// diff applied (with or without trusted line numbers), and at least 95%
// applied for every perturbed variant.
func TestCorpusGoSource(t *testing.T) {
	cases := loadCorpus(t)
	variants := corpusVariants()
	tallies, table := runCorpus(t, cases, variants)
	t.Logf("corpus of %d edited Go source files:\n%s", len(cases), table)
	for k, v := range variants {
		tl := tallies[k]
		rate := float64(tl.ok) / float64(len(cases))
		if tl.wrong != 0 {
			t.Errorf("%s: %d wrong results", v.name, tl.wrong)
		}
		if strings.HasPrefix(v.name, "exact") && tl.ok != len(cases) {
			t.Errorf("%s: %d of %d exact diffs not applied", v.name, len(cases)-tl.ok, len(cases))
		}
		if rate < 0.95 {
			t.Errorf("%s: success rate %.1f%% < 95%%", v.name, 100*rate)
		}
	}
}

// TestCorpusRepetitive is the corpus on generated files whose blocks repeat
// every few lines (syscall wrappers and tables, protobuf messages, stringer
// output, a dispatch switch; 2,000+ lines each), with the same variants,
// among them hunks shifted by different amounts in both directions. A
// hunk's lines occur at many places there, so many diffs are refused as
// ambiguous; none may be applied anywhere but where it was meant.
func TestCorpusRepetitive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cases, err := corpus.FromSources(ctx, generatedSources(25), 11)
	if errors.Is(err, corpus.ErrUnavailable) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	variants := corpusVariants()
	tallies, table := runCorpus(t, cases, variants)
	t.Logf("corpus of %d edited generated files:\n%s", len(cases), table)
	for k, v := range variants {
		if tallies[k].wrong != 0 {
			t.Errorf("%s: %d wrong results", v.name, tallies[k].wrong)
		}
	}
	if tl := tallies[len(variants)-1]; tl.ok != len(cases) {
		t.Errorf("exact+trust-line-numbers: %d of %d exact diffs not applied", len(cases)-tl.ok, len(cases))
	}
}
