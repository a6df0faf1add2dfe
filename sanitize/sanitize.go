package sanitize

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DefaultMaxString is the length, in bytes, past which String and Value cut
// a string when Options.MaxString is zero.
const DefaultMaxString = 2048

// MinKeyLen is the shortest HMAC key New accepts.
const MinKeyLen = 16

// MarkerPrefix starts every redaction marker: a redacted value reads
// "hmac-sha256:" followed by 64 lower-case hex digits.
const MarkerPrefix = "hmac-sha256:"

const markerLen = len(MarkerPrefix) + 2*sha256.Size

// lookahead is how far past MaxString a truncated string is still scanned,
// so that a secret starting just before the cut is recognised whole (the
// longest fixed-shape secret we match is well under this).
const lookahead = 1024

// ErrKeyTooShort is returned (wrapped) by New and LoadOrCreateKey when the
// HMAC key has fewer than MinKeyLen bytes.
var ErrKeyTooShort = errors.New("sanitize: HMAC key too short")

// Options configure a Sanitizer.
type Options struct {
	// Key is the per-installation HMAC key (see LoadOrCreateKey). Required,
	// at least MinKeyLen bytes. New copies it.
	Key []byte
	// MaxString is the length in bytes past which strings are cut; 0 means
	// DefaultMaxString and a negative value disables truncation.
	MaxString int
}

// Sanitizer redacts secrets and sensitive fields and truncates long
// strings. It is safe for concurrent use. Create one with New; the zero
// value is not usable.
type Sanitizer struct {
	key  []byte
	max  int
	macs sync.Pool // of hash.Hash (HMAC-SHA256 under key)
}

// New returns a Sanitizer for opts. It fails, wrapping ErrKeyTooShort, when
// the key is shorter than MinKeyLen bytes.
func New(opts Options) (*Sanitizer, error) {
	if len(opts.Key) < MinKeyLen {
		return nil, fmt.Errorf("new sanitizer: key has %d bytes, need at least %d: %w", len(opts.Key), MinKeyLen, ErrKeyTooShort)
	}
	s := &Sanitizer{key: append([]byte(nil), opts.Key...), max: opts.MaxString}
	if s.max == 0 {
		s.max = DefaultMaxString
	}
	s.macs.New = func() any { return hmac.New(sha256.New, s.key) }
	return s, nil
}

// Redact returns the marker for secret: "hmac-sha256:" followed by the full
// 64-hex-digit HMAC-SHA256 of secret under the installation key. Equal
// secrets give equal markers under one key, so records can be correlated;
// the secret cannot be recovered without the key. Short or low-entropy
// secrets (a four-digit PIN) can be brute-forced by whoever holds the key.
func (s *Sanitizer) Redact(secret string) string {
	h := s.macs.Get().(hash.Hash)
	h.Reset()
	h.Write([]byte(secret))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	s.macs.Put(h)
	var out [markerLen]byte
	copy(out[:], MarkerPrefix)
	hex.Encode(out[len(MarkerPrefix):], sum[:])
	return string(out[:])
}

// isMarker reports whether v is exactly a redaction marker, so that
// sanitizing already-sanitized data does not redact the markers again.
func isMarker(v string) bool {
	if len(v) != markerLen || !strings.HasPrefix(v, MarkerPrefix) {
		return false
	}
	for i := len(MarkerPrefix); i < len(v); i++ {
		c := v[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ContainsSecret reports whether str holds anything shaped like a secret
// (see the package documentation for the shapes). It does not know field
// names, so a bare password with no "password=" in front is not found.
func (s *Sanitizer) ContainsSecret(str string) bool {
	sc := scanner{s: str}
	_, _, ok := sc.next(0)
	return ok
}

// String returns str with every secret-shaped span replaced by its marker
// and, when str is longer than MaxString bytes, cut at MaxString (on a
// UTF-8 boundary) and followed by "…[truncated, N bytes]" where N is the
// length of str. A secret that starts before the cut is replaced whole.
// When nothing changes, str itself is returned without copying.
func (s *Sanitizer) String(str string) string {
	out, _ := s.sanitizeString(str, nil)
	return out
}

// StringReport is String that calls report with each marker it puts in,
// one call per secret replaced (a marker str already held is not one).
func (s *Sanitizer) StringReport(str string, report func(marker string)) string {
	out, _ := s.sanitizeString(str, report)
	return out
}

// sanitizeString is String that also reports whether the result differs,
// and each marker it puts in to report (when not nil).
func (s *Sanitizer) sanitizeString(str string, report func(string)) (string, bool) {
	limit, truncated := len(str), false
	if s.max > 0 && len(str) > s.max && !alreadyCut(str, s.max) {
		limit, truncated = s.max, true
	}
	window := str
	if truncated && len(window) > limit+lookahead {
		window = window[:limit+lookahead]
	}
	var b strings.Builder
	sc := scanner{s: window}
	pos := 0
	for pos < limit {
		a, e, ok := sc.next(pos)
		if !ok || a >= limit {
			break
		}
		if b.Cap() == 0 {
			b.Grow(min(len(str), limit) + markerLen)
		}
		b.WriteString(str[pos:a])
		b.WriteString(s.redact(window[a:e], report))
		pos = e
	}
	if b.Cap() == 0 && !truncated {
		return str, false
	}
	if pos < limit {
		cut := limit
		for cut > pos && cut < len(str) && !utf8.RuneStart(str[cut]) {
			cut--
		}
		b.WriteString(str[pos:cut])
	}
	if truncated {
		b.WriteString(cutNote)
		b.WriteString(strconv.Itoa(len(str)))
		b.WriteString(" bytes]")
	}
	return b.String(), true
}

const cutNote = "…[truncated, "

// alreadyCut reports whether str is the output of a cut at max: at most
// max bytes (plus the markers put in) followed by the truncation note.
// Cutting it again would only replace the original length by a wrong one.
func alreadyCut(str string, max int) bool {
	i := strings.LastIndex(str, cutNote)
	if i < 0 || !strings.HasSuffix(str, " bytes]") {
		return false
	}
	// Markers may have made the kept part longer than max; allowing for a
	// bounded number of them keeps a forged note from lifting the limit.
	if i > max+min(strings.Count(str[:i], MarkerPrefix), 16)*markerLen {
		return false
	}
	digits := str[i+len(cutNote) : len(str)-len(" bytes]")]
	if digits == "" {
		return false
	}
	for j := 0; j < len(digits); j++ {
		if digits[j] < '0' || digits[j] > '9' {
			return false
		}
	}
	return true
}

// Value returns a sanitized deep copy of v. It understands decoded JSON
// (map[string]any, []any, string, float64, json.Number, bool, nil) plus
// []string, map[string]string, the Go integer and float types and []byte
// (treated as text); any other type is encoded to JSON and sanitized in
// that form (or replaced by a note when it cannot be encoded), so no value
// passes unscanned.
//
// The value of a map key is replaced whole by its marker (non-string values
// over their JSON encoding; nil stays nil) when the key's dot path relative
// to v is listed in sensitive ("password", "headers.authorization"; matched
// case-insensitively, "*" matches any one key, arrays are transparent) or
// when the key's name is obviously secret (password, passwd, passphrase,
// secret, token, api_key, apikey, access_key, private_key, secret_key,
// authorization, cookie, credentials, auth, signature and their camelCase,
// kebab and upper-case spellings). Every other string, map keys included, goes
// through String. Containers are always copied; strings are shared when
// unchanged.
//
// Containers nested deeper than MaxDepth are replaced by the string
// DeepMarker, so that whatever a caller sends, its sanitized form can be
// recorded (the audit log's canonical encoding refuses deeper nesting).
func (s *Sanitizer) Value(v any, sensitive []string) any {
	return s.valueAt(v, sensitive, 0, nil)
}

// ValueReport is Value that calls report with each marker it puts in, one
// call per secret or sensitive value replaced (markers v already held are
// not).
func (s *Sanitizer) ValueReport(v any, sensitive []string, report func(marker string)) any {
	return s.valueAt(v, sensitive, 0, report)
}

// redact is Redact that tells report (when not nil) the marker.
func (s *Sanitizer) redact(secret string, report func(string)) string {
	m := s.Redact(secret)
	if report != nil {
		report(m)
	}
	return m
}

// StringMapper is a value of a fixed shape whose only free text is its
// strings (a listing's typed entries): MapStrings returns a copy with
// each string replaced by f's answer, and whether any changed. Value
// sanitizes it through MapStrings and keeps its type, instead of turning
// it into generic values through JSON.
type StringMapper interface {
	MapStrings(f func(string) string) (any, bool)
}

// MaxDepth is how deep Value copies containers; DeepMarker stands for a
// container below it.
const (
	MaxDepth   = 64
	DeepMarker = "[nested deeper than 64 levels: not recorded]"
)

func (s *Sanitizer) value(v any, paths []string) any { return s.valueAt(v, paths, 0, nil) }

func (s *Sanitizer) valueAt(v any, paths []string, depth int, report func(string)) any {
	if depth >= MaxDepth {
		switch v.(type) {
		case map[string]any, []any, map[string]string, []string:
			return DeepMarker
		}
	}
	switch t := v.(type) {
	case nil, bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return v
	case string:
		if out, changed := s.sanitizeString(t, report); changed {
			return out
		}
		return v
	case map[string]any:
		if t == nil {
			return v
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			redact, sub := matchPaths(k, paths)
			key, _ := s.sanitizeString(k, report)
			if redact || sensitiveName(k) {
				out[key] = s.redactValue(e, report)
			} else {
				out[key] = s.valueAt(e, sub, depth+1, report)
			}
		}
		return out
	case []any:
		if t == nil {
			return v
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = s.valueAt(e, paths, depth+1, report)
		}
		return out
	case map[string]string:
		if t == nil {
			return v
		}
		out := make(map[string]string, len(t))
		for k, e := range t {
			redact, _ := matchPaths(k, paths)
			key, _ := s.sanitizeString(k, report)
			if redact || sensitiveName(k) {
				if !isMarker(e) {
					e = s.redact(e, report)
				}
				out[key] = e
			} else {
				out[key], _ = s.sanitizeString(e, report)
			}
		}
		return out
	case []string:
		if t == nil {
			return v
		}
		out := make([]string, len(t))
		for i, e := range t {
			out[i], _ = s.sanitizeString(e, report)
		}
		return out
	case []byte:
		out, _ := s.sanitizeString(string(t), report)
		return out
	case StringMapper:
		f := s.String
		if report != nil {
			f = func(x string) string { return s.StringReport(x, report) }
		}
		out, changed := t.MapStrings(f)
		if !changed {
			return v
		}
		return out
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("[unencodable %T]", v)
		}
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			return fmt.Sprintf("[unencodable %T]", v)
		}
		return s.valueAt(generic, paths, depth, report)
	}
}

// redactValue replaces a whole value held under a sensitive key.
func (s *Sanitizer) redactValue(v any, report func(string)) any {
	switch t := v.(type) {
	case nil:
		return nil
	case string:
		if isMarker(t) {
			return t
		}
		return s.redact(t, report)
	case []byte:
		return s.redact(string(t), report)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s.redact(fmt.Sprint(v), report)
	}
	return s.redact(string(b), report)
}

// matchPaths reports whether key completes one of paths (its value must be
// redacted) and returns the remainders of the paths that continue below
// key. It allocates only when some path continues below key.
func matchPaths(key string, paths []string) (redact bool, sub []string) {
	for _, p := range paths {
		seg, rest, more := strings.Cut(p, ".")
		if seg != "*" && !strings.EqualFold(seg, key) {
			continue
		}
		if !more {
			redact = true
			continue
		}
		sub = append(sub, rest)
	}
	return redact, sub
}
