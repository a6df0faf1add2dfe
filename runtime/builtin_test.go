package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/schema"
)

func builtinHarness(t *testing.T) *Harness {
	t.Helper()
	s, err := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	reg := schema.NewRegistry()
	h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, config.Default().GuardOptions()), Sanitizer: s})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type greetInput struct {
	Name  string `json:"name" jsonschema:"description=who to greet,minLength=1"`
	Lang  string `json:"lang,omitempty" jsonschema:"description=language\\, as a code,enum=en,enum=fr"`
	Times int    `json:"times,omitempty" desc:"how many times (the older tag)"`
}

// TestRegisterFuncTakesDescriptionsFromTags registers a typed function
// whose input uses both tag conventions and checks the published schema
// and that the constraints hold at Execute.
func TestRegisterFuncTakesDescriptionsFromTags(t *testing.T) {
	h := builtinHarness(t)
	err := RegisterFunc(h, Spec{Name: "greet", Description: "greet someone"}, func(_ context.Context, in greetInput) (map[string]any, error) {
		return map[string]any{"text": strings.Repeat("hello "+in.Name+" ", max(in.Times, 1))}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sc, ok := h.Registry().Lookup("greet")
	if !ok {
		t.Fatal("not registered")
	}
	var s struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Enum        []any  `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(sc.Input, &s); err != nil {
		t.Fatal(err)
	}
	for prop, want := range map[string]string{"name": "who to greet", "lang": "language, as a code", "times": "how many times (the older tag)"} {
		if got := s.Properties[prop].Description; got != want {
			t.Errorf("%s: description %q, want %q", prop, got, want)
		}
	}
	for _, tc := range []struct {
		name  string
		input map[string]any
		code  action.Code
	}{
		{"valid", map[string]any{"name": "ada", "lang": "fr"}, action.CodeNone},
		{"minLength from the tag", map[string]any{"name": ""}, action.CodeInvalidInput},
		{"enum from the tag", map[string]any{"name": "ada", "lang": "de"}, action.CodeInvalidInput},
	} {
		obs := h.Execute(context.Background(), action.Action{Name: "greet", Input: tc.input})
		if obs.Code != tc.code {
			t.Errorf("%s: code %q (%s), want %q", tc.name, obs.Code, obs.Message, tc.code)
		}
	}
}

func TestRegisterFuncRefusesATagItCannotHonour(t *testing.T) {
	h := builtinHarness(t)
	type in struct {
		N int `json:"n" jsonschema:"multipleOf=2"`
	}
	err := RegisterFunc(h, Spec{Name: "n"}, func(_ context.Context, _ in) (map[string]any, error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), "multipleOf") {
		t.Fatalf("err %v, want the unknown key named", err)
	}
	if _, ok := h.Registry().Lookup("n"); ok {
		t.Fatal("registered anyway")
	}
}
