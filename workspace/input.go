package workspace

import (
	"encoding/json"
	"math"

	"github.com/harness-runtime/harness/action"
)

// Inputs arrive as decoded JSON that the guard has already validated
// against the action's schema. These accessors still check types, so a
// program that calls Run directly gets invalid_input, never a panic.

func strArg(in map[string]any, key string) (string, bool, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, action.Errorf(action.CodeInvalidInput, "%s: want a string", key)
	}
	return s, true, nil
}

func boolArg(in map[string]any, key string, def bool) (bool, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, action.Errorf(action.CodeInvalidInput, "%s: want a boolean", key)
	}
	return b, nil
}

func intArg(in map[string]any, key string, def int64) (int64, error) {
	v, ok := in[key]
	if !ok || v == nil {
		return def, nil
	}
	var f float64
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case int32:
		return int64(n), nil
	case float64:
		f = n
	case json.Number:
		if i, err := n.Int64(); err == nil {
			return i, nil
		}
		x, err := n.Float64()
		if err != nil {
			return 0, action.Errorf(action.CodeInvalidInput, "%s: want an integer", key)
		}
		f = x
	default:
		return 0, action.Errorf(action.CodeInvalidInput, "%s: want an integer", key)
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, action.Errorf(action.CodeInvalidInput, "%s: want an integer", key)
	}
	return int64(f), nil
}
