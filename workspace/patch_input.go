package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace/patch"
)

type patchInput struct {
	path, content, text, expected string
	hasPath, hasContent, hasPatch bool
	strip                         int
	opts                          patch.Options
}

func readPatchInput(in map[string]any) (patchInput, error) {
	var pi patchInput
	var err error
	if pi.path, pi.hasPath, err = strArg(in, "path"); err != nil {
		return pi, err
	}
	if pi.content, pi.hasContent, err = strArg(in, "content"); err != nil {
		return pi, err
	}
	if pi.text, pi.hasPatch, err = strArg(in, "patch"); err != nil {
		return pi, err
	}
	if pi.expected, _, err = strArg(in, "expected_sha256"); err != nil {
		return pi, err
	}
	strip, err := intArg(in, "strip", -1)
	if err != nil {
		return pi, err
	}
	if _, given := in["strip"]; given && (strip < 0 || strip > 64) {
		return pi, action.Errorf(action.CodeInvalidInput, "strip: want an integer from 0 to 64")
	}
	pi.strip = int(strip)
	if pi.opts.TrustLineNumbers, err = boolArg(in, "trust_line_numbers", false); err != nil {
		return pi, err
	}
	if v, ok := in["fuzz"]; ok && v != nil {
		f, ok := number(v)
		if !ok || math.IsNaN(f) || f < 0 || f > 1 {
			return pi, action.Errorf(action.CodeInvalidInput, "fuzz: want a number from 0 to 1")
		}
		pi.opts.Fuzz = f
		if f == 0 {
			pi.opts.Fuzz = patch.MinFuzz
		}
	}
	switch {
	case pi.hasContent && pi.hasPatch:
		return pi, action.Errorf(action.CodeInvalidInput, "give either content or patch, not both")
	case !pi.hasContent && !pi.hasPatch:
		return pi, action.Errorf(action.CodeInvalidInput, "give content (the whole new file) or patch")
	case pi.hasContent && !pi.hasPath:
		return pi, action.Errorf(action.CodeInvalidInput, "content needs a path")
	case pi.expected != "" && !pi.hasPath:
		return pi, action.Errorf(action.CodeInvalidInput, "expected_sha256 needs a path")
	}
	if pi.expected != "" {
		pi.expected = strings.ToLower(pi.expected)
		if b, err := hex.DecodeString(pi.expected); err != nil || len(b) != sha256.Size {
			return pi, action.Errorf(action.CodeInvalidInput, "expected_sha256: want 64 hex digits")
		}
	}
	if len(pi.content) > maxPatchFileBytes {
		return pi, action.Errorf(action.CodeTooLarge, "content is larger than %d bytes", maxPatchFileBytes)
	}
	return pi, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
