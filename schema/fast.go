package schema

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// fastNode is a validator for the plain subset of JSON Schema that action
// inputs mostly use (types, properties, required, additionalProperties,
// items, numeric bounds, length and size bounds). It exists because the
// general validator costs more than the rest of an action's dispatch.
//
// It is only ever allowed to say "valid" when the general validator would
// too: anything it does not model (other keywords, json.Number values it
// cannot compare exactly, Go types that are not decoded JSON) makes it
// answer "cannot tell", and every "invalid" is re-checked by the general
// validator, which also writes the message. FuzzFastMatchesLibrary holds
// the two to the same verdicts.
type fastNode struct {
	types      uint8 // bit set of jsonType*; 0 = any type
	props      map[string]*fastNode
	required   []string
	closed     bool      // additionalProperties: false
	additional *fastNode // additionalProperties: {schema}
	items      *fastNode
	min, max   *float64
	xmin, xmax *float64 // exclusive bounds
	minLen     int
	maxLen     int // -1: none
	minItems   int
	maxItems   int // -1: none
	// pattern is compiled with the regexp package, as the general
	// validator compiles it, so both agree on every string.
	pattern *regexp.Regexp
	allOf   []*fastNode
	anyOf   []*fastNode
	oneOf   []*fastNode
	not     *fastNode
}

const (
	jsonNull uint8 = 1 << iota
	jsonBool
	jsonInteger
	jsonNumber
	jsonString
	jsonArray
	jsonObject
)

var typeBits = map[string]uint8{
	"null": jsonNull, "boolean": jsonBool, "integer": jsonInteger, "number": jsonNumber | jsonInteger,
	"string": jsonString, "array": jsonArray, "object": jsonObject,
}

// annotations are keywords that never change a verdict. "format" and the
// content keywords are not among them: the general validator asserts them.
var annotations = map[string]bool{
	"description": true, "title": true, "default": true, "examples": true, "$comment": true,
	"deprecated": true, "readOnly": true, "writeOnly": true,
}

// compileFast returns the fast validator for raw, or nil when the schema
// uses anything outside the subset.
func compileFast(raw json.RawMessage) *fastNode {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return fastFrom(m, 0)
}

func fastFrom(m map[string]any, depth int) *fastNode {
	if depth > 16 {
		return nil
	}
	n := &fastNode{maxLen: -1, maxItems: -1}
	for k, v := range m {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				b, ok := typeBits[t]
				if !ok {
					return nil
				}
				n.types = b
			case []any:
				for _, e := range t {
					s, _ := e.(string)
					b, ok := typeBits[s]
					if !ok {
						return nil
					}
					n.types |= b
				}
			default:
				return nil
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			n.props = make(map[string]*fastNode, len(props))
			for name, ps := range props {
				pm, ok := ps.(map[string]any)
				if !ok {
					return nil
				}
				if n.props[name] = fastFrom(pm, depth+1); n.props[name] == nil {
					return nil
				}
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				n.required = append(n.required, s)
			}
		case "additionalProperties":
			switch ap := v.(type) {
			case bool:
				n.closed = !ap
			case map[string]any:
				if n.additional = fastFrom(ap, depth+1); n.additional == nil {
					return nil
				}
			default:
				return nil
			}
		case "items":
			im, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if n.items = fastFrom(im, depth+1); n.items == nil {
				return nil
			}
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			f, ok := v.(float64)
			if !ok || math.Abs(f) > 1<<53 {
				return nil
			}
			switch k {
			case "minimum":
				n.min = &f
			case "maximum":
				n.max = &f
			case "exclusiveMinimum":
				n.xmin = &f
			default:
				n.xmax = &f
			}
		case "pattern":
			p, ok := v.(string)
			if !ok {
				return nil
			}
			re, err := regexp.Compile(p)
			if err != nil {
				return nil
			}
			n.pattern = re
		case "allOf", "anyOf", "oneOf":
			list, ok := v.([]any)
			if !ok || len(list) == 0 {
				return nil
			}
			subs := make([]*fastNode, 0, len(list))
			for _, e := range list {
				em, ok := e.(map[string]any)
				if !ok {
					return nil
				}
				sub := fastFrom(em, depth+1)
				if sub == nil {
					return nil
				}
				subs = append(subs, sub)
			}
			switch k {
			case "allOf":
				n.allOf = subs
			case "anyOf":
				n.anyOf = subs
			default:
				n.oneOf = subs
			}
		case "not":
			nm, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			if n.not = fastFrom(nm, depth+1); n.not == nil {
				return nil
			}
		case "minLength", "maxLength", "minItems", "maxItems":
			f, ok := v.(float64)
			if !ok || f < 0 || f != math.Trunc(f) || f > 1<<31 {
				return nil
			}
			switch k {
			case "minLength":
				n.minLen = int(f)
			case "maxLength":
				n.maxLen = int(f)
			case "minItems":
				n.minItems = int(f)
			default:
				n.maxItems = int(f)
			}
		default:
			if !annotations[k] {
				return nil
			}
		}
	}
	return n
}

// verdict of the fast validator.
type verdict uint8

const (
	cannotTell verdict = iota
	valid
	invalid
)

func (n *fastNode) check(v any) verdict {
	r := n.checkOwn(v)
	if r == invalid {
		return invalid
	}
	if c := n.checkCombinators(v); c != valid {
		return c
	}
	return r
}

// checkCombinators applies allOf, anyOf, oneOf and not. An answer it cannot
// give for a subschema makes the whole answer "cannot tell", except where
// the other subschemas already settle it.
func (n *fastNode) checkCombinators(v any) verdict {
	result := valid
	for _, sub := range n.allOf {
		switch sub.check(v) {
		case invalid:
			return invalid
		case cannotTell:
			result = cannotTell
		}
	}
	if len(n.anyOf) > 0 {
		matched, unsure := false, false
		for _, sub := range n.anyOf {
			switch sub.check(v) {
			case valid:
				matched = true
			case cannotTell:
				unsure = true
			}
		}
		switch {
		case matched:
		case unsure:
			result = cannotTell
		default:
			return invalid
		}
	}
	if len(n.oneOf) > 0 {
		matches := 0
		for _, sub := range n.oneOf {
			switch sub.check(v) {
			case valid:
				matches++
			case cannotTell:
				return cannotTell
			}
		}
		if matches != 1 {
			return invalid
		}
	}
	if n.not != nil {
		switch n.not.check(v) {
		case valid:
			return invalid
		case cannotTell:
			return cannotTell
		}
	}
	return result
}

// checkOwn applies the keywords other than the combinators.
func (n *fastNode) checkOwn(v any) verdict {
	var kind uint8
	var num float64
	switch x := v.(type) {
	case nil:
		kind = jsonNull
	case bool:
		kind = jsonBool
	case string:
		kind = jsonString
	case float64:
		kind, num = numKind(x)
	case int:
		if x > 1<<53 || x < -(1<<53) {
			return cannotTell
		}
		kind, num = jsonInteger, float64(x)
	case int64:
		if x > 1<<53 || x < -(1<<53) {
			return cannotTell
		}
		kind, num = jsonInteger, float64(x)
	case json.Number:
		i, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil || i > 1<<53 || i < -(1<<53) {
			return cannotTell
		}
		kind, num = jsonInteger, float64(i)
	case []any:
		kind = jsonArray
	case map[string]any:
		kind = jsonObject
	default:
		return cannotTell
	}
	if n.types != 0 && n.types&kind == 0 {
		return invalid
	}
	switch kind {
	case jsonInteger, jsonNumber:
		if n.min != nil && num < *n.min || n.max != nil && num > *n.max ||
			n.xmin != nil && num <= *n.xmin || n.xmax != nil && num >= *n.xmax {
			return invalid
		}
	case jsonString:
		s := v.(string)
		if n.minLen > 0 || n.maxLen >= 0 {
			l := utf8.RuneCountInString(s)
			if l < n.minLen || n.maxLen >= 0 && l > n.maxLen {
				return invalid
			}
		}
		if n.pattern != nil && !n.pattern.MatchString(s) {
			return invalid
		}
	case jsonArray:
		arr := v.([]any)
		if len(arr) < n.minItems || n.maxItems >= 0 && len(arr) > n.maxItems {
			return invalid
		}
		if n.items != nil {
			for _, e := range arr {
				if r := n.items.check(e); r != valid {
					return r
				}
			}
		}
	case jsonObject:
		obj := v.(map[string]any)
		for _, r := range n.required {
			if _, ok := obj[r]; !ok {
				return invalid
			}
		}
		for k, e := range obj {
			p, ok := n.props[k]
			switch {
			case ok:
			case n.closed:
				return invalid
			case n.additional != nil:
				p = n.additional
			default:
				continue
			}
			if r := p.check(e); r != valid {
				return r
			}
		}
	}
	return valid
}

// numKind classifies a float64 as an integer or a number, as JSON Schema
// does (1.0 is an integer).
func numKind(f float64) (uint8, float64) {
	if f == math.Trunc(f) && !math.IsInf(f, 0) {
		return jsonInteger, f
	}
	return jsonNumber, f
}
