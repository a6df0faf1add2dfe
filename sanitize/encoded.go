package sanitize

import (
	"encoding/base64"
	"encoding/hex"
)

// Runs of base64 (either alphabet) or hex are checked when they end: an
// exact 40-byte [A-Za-z0-9+/] piece may be an AWS secret access key, and a
// run that decodes to text holding a secret is that secret, encoded.

// minRunCheck is the shortest run runAt looks at.
const minRunCheck = minEncoded

// minEncoded is the shortest run tried as an encoding: 16 base64 bytes
// decode to 12 ("password=abc"); the shortest fixed shapes (an AWS key id,
// 20 bytes) need 28 base64 or 40 hex bytes.
const minEncoded = 16

// maxDecode bounds the nesting of encodings scanned (base64 of base64 of a
// secret is found; a third layer is not).
const maxDecode = 2

// runAt checks the run s[a:e] of [A-Za-z0-9+/_-] bytes.
func (sc *scanner) runAt(a, e int) (int, int) {
	s := sc.s
	if e-a >= 40 {
		// A bare AWS secret access key: a 40-byte [A-Za-z0-9+/] piece
		// between other bytes ('-' and '_' end it too). A piece after '_'
		// is the tail of an identifier or of another token
		// ("sgp_local_…"), not a key on its own.
		p := a
		for q := a; q <= e; q++ {
			if q == e || s[q] == '-' || s[q] == '_' {
				if q-p == 40 && (p == a || s[p-1] != '_') && awsSecretShape(s[p:q]) {
					return p, sc.widen(p+1, q)
				}
				p = q + 1
			}
		}
	}
	if sc.decode < maxDecode {
		if end, ok := sc.encodedSecret(a, e); ok {
			return a, end
		}
	}
	return a, a
}

// encodedSecret reports whether the run s[a:e], as hex or as base64 (with
// its '=' padding after e, which the returned end then includes), decodes
// to printable ASCII in which a secret is found.
func (sc *scanner) encodedSecret(a, e int) (int, bool) {
	s := sc.s
	run := s[a:e]
	end := e
	for end < len(s) && end-e < 2 && s[end] == '=' {
		end++
	}
	// Most runs are words, hashes and identifiers, whose decoding is
	// binary: the first bytes tell, before anything else is looked at.
	head := run[:16]
	var kind encoding
	c0 := run[0]
	switch {
	case isHexRun(head):
		// Printable ASCII starts with a hex digit 2-7 (or 0 for a tab or
		// a line end).
		if c0 < '2' && c0 != '0' || c0 > '7' {
			return 0, false
		}
		kind = hexEnc
	case !(c0 >= 'I' && c0 <= 'Z' || c0 >= 'a' && c0 <= 'f' || c0 == 'C' || c0 == 'D'):
		// The first base64 digit holds the top six bits of the first
		// byte: these are the ones that printable ASCII (or a tab or a
		// line end) can have.
		return 0, false
	case containsAny(head, "-_"):
		kind = url64Enc
	default:
		kind = std64Enc
	}
	var hb [12]byte
	if n, err := kind.decode(hb[:], head); err != nil || !printable(hb[:n]) {
		return 0, false
	}
	if kind == hexEnc && (len(run)%2 != 0 || !isHexRun(run)) {
		kind = std64Enc // hex at its start only: try it as base64
		if containsAny(run, "-_") {
			kind = url64Enc
		}
		if n, err := kind.decode(hb[:], head); err != nil || !printable(hb[:n]) {
			return 0, false
		}
	}
	if kind != hexEnc {
		if containsAny(run, "-_") && containsAny(run, "+/") {
			return 0, false // both alphabets: not one encoding
		}
		if kind == std64Enc && containsAny(run, "-_") {
			kind = url64Enc
		}
		if len(run)%4 == 1 {
			run = run[:len(run)-1]
		}
	}
	var small [384]byte
	buf := small[:]
	if len(run) > len(buf) {
		buf = make([]byte, len(run))
	}
	n, err := kind.decode(buf, run)
	if err != nil || !printable(buf[:n]) {
		return 0, false
	}
	inner := scanner{s: string(buf[:n]), decode: sc.decode + 1}
	if _, _, ok := inner.next(0); ok {
		return end, true
	}
	return 0, false
}

// encoding is how a run is decoded.
type encoding uint8

const (
	hexEnc encoding = iota
	std64Enc
	url64Enc
)

func (k encoding) decode(dst []byte, src string) (int, error) {
	switch k {
	case hexEnc:
		return hex.Decode(dst, []byte(src))
	case std64Enc:
		return base64.RawStdEncoding.Decode(dst, []byte(src))
	}
	return base64.RawURLEncoding.Decode(dst, []byte(src))
}

func isHexRun(s string) bool {
	for i := 0; i < len(s); i++ {
		if class[s[i]]&clsHexAny == 0 {
			return false
		}
	}
	return true
}

func containsAny(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		for j := 0; j < len(chars); j++ {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}

// printable reports whether b is ASCII text: printable bytes, tabs and
// line ends.
func printable(b []byte) bool {
	for _, c := range b {
		if (c < 0x20 || c > 0x7e) && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
