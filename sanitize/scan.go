package sanitize

import (
	"math"
	"math/bits"
	"strings"
)

// The scanner walks a string once. At each byte a two-level table lookup
// (first byte, then the pair with the next byte) decides whether any rule
// can start here; only then is a hand-written matcher run. No regular
// expression runs on the hot path. Rules either have a fixed prefix (ghp_,
// AKIA, eyJ, -----BEGIN …) or a context (a secret-looking name before ':'
// or '=', "://user:pass@", "Bearer "); one rule, the AWS secret access key,
// has neither and is checked on every maximal [A-Za-z0-9+/] run of exactly
// 40 bytes.

// Byte classes.
const (
	clsUpperDigit = 1 << iota // A-Z 0-9
	clsAlnum                  // A-Z a-z 0-9
	clsURL64                  // A-Z a-z 0-9 _ -
	clsStd64                  // A-Z a-z 0-9 + /
	clsHex                    // 0-9 a-f
	clsTokenWord              // A-Z a-z 0-9 _
	clsBearer                 // A-Z a-z 0-9 - . _ ~ + / =  (RFC 6750 b64token)
	clsSlackWord              // A-Z a-z 0-9 -
)

var (
	class     [256]uint8
	firstByte [256]bool
	pairTrig  [1 << 16]bool
)

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		up, lo, dg := isUpper(b), isLower(b), b >= '0' && b <= '9'
		var k uint8
		if up || dg {
			k |= clsUpperDigit
		}
		if up || lo || dg {
			k |= clsAlnum | clsURL64 | clsStd64 | clsTokenWord | clsBearer | clsSlackWord
		}
		if dg || (b >= 'a' && b <= 'f') {
			k |= clsHex
		}
		switch b {
		case '_':
			k |= clsURL64 | clsTokenWord | clsBearer
		case '-':
			k |= clsURL64 | clsBearer | clsSlackWord
		case '+', '/':
			k |= clsStd64 | clsBearer
		case '.', '~', '=':
			k |= clsBearer
		}
		class[c] = k
	}
	trig := func(c byte, next string) {
		firstByte[c] = true
		for i := 0; i < len(next); i++ {
			pairTrig[int(c)<<8|int(next[i])] = true
		}
	}
	trig('A', "KSBCGIRNP3")    // AWS key ids, AIza, AGE-SECRET-KEY
	trig('g', "hil")           // ghp_ …, github_pat_, glpat-
	trig('s', "kh")            // sk-…, sk_live_, shpat_
	trig('r', "k")             // rk_live_
	trig('p', "y")             // pypi-
	trig('x', "oa")            // xox?-, xapp-
	trig('e', "y")             // eyJ (JWT)
	trig('-', "-u")            // -----BEGIN … PRIVATE KEY, --password x, -u user:pass
	trig('n', "p")             // npm_
	trig('h', "fo")            // hf_, hooks.slack.com
	trig('S', "G")             // SG. (SendGrid)
	trig('w', "h")             // whsec_
	trig('y', "a")             // ya29.
	trig('G', "O")             // GOCSPX-
	trig('d', "oa")            // dop_v1_, dapi
	trig('B', "eE")            // Bearer
	trig('b', "eE")            // bearer
	for n := 0; n < 256; n++ { // name=value, name: value, scheme://
		pairTrig[int(':')<<8|n] = true
		pairTrig[int('=')<<8|n] = true
	}
	firstByte[':'], firstByte['='] = true, true
}

// next returns the first secret span [start, end) of sc.s with start >=
// from. It never allocates.
func (sc *scanner) next(from int) (start, end int, ok bool) {
	s := sc.s
	run := from // start of the current [A-Za-z0-9+/] run, -1 if it began before from
	if from > 0 && class[s[from-1]]&clsStd64 != 0 {
		run = -1
	}
	for i := from; i < len(s); i++ {
		c := s[i]
		if class[c]&clsStd64 == 0 {
			if run >= 0 && i-run == 40 && awsSecretShape(s[run:i]) {
				return run, sc.widen(run+1, i), true
			}
			run = i + 1
		}
		if !firstByte[c] {
			continue
		}
		var n byte
		if i+1 < len(s) {
			n = s[i+1]
		}
		if !pairTrig[int(c)<<8|int(n)] {
			continue
		}
		if a, e := sc.find(i); e > a {
			return a, e, true
		}
	}
	if run >= 0 && len(s)-run == 40 && awsSecretShape(s[run:]) {
		return run, len(s), true
	}
	return 0, 0, false
}

// find is matchAt with shape spans widened: a shape span ends at its class
// boundary, and another secret glued on ("ghp_…sk_live_…") may start
// inside it. Context rules widen their own spans.
func (sc *scanner) find(i int) (start, end int) {
	a, e := sc.matchAt(i)
	if e <= a {
		return a, e
	}
	switch sc.s[i] {
	case ':', '=', 'B', 'b':
		return a, e
	}
	from := a
	if a == i {
		from = a + 1 // the rule that matched at i would only match again
	}
	return a, sc.widen(from, e)
}

// matchAt runs the rules that can start at s[i]. It returns an empty span
// when none matches; a non-empty span always has start >= i.
func (sc *scanner) matchAt(i int) (start, end int) {
	s := sc.s
	t := s[i:]
	switch s[i] {
	case 'A':
		if len(t) >= 4 && awsKeyIDPrefix(t[:4]) {
			e := sc.runEnd(i+4, clsUpperDigit)
			if n := e - i - 4; n == 16 || (n > 16 && sc.digitFrom(i+4, clsUpperDigit)) {
				return i, e
			}
		}
		if e, ok := sc.prefixed(i, "AIza", clsURL64, 35); ok {
			return i, e
		}
		if e, ok := sc.prefixed(i, "AGE-SECRET-KEY-1", clsUpperDigit, 40); ok {
			return i, e
		}
	case 'g':
		if len(t) >= 4 && t[0] == 'g' && t[1] == 'h' && t[3] == '_' && strings.IndexByte("pousr", t[2]) >= 0 {
			if e := sc.runEnd(i+4, clsAlnum); e-i-4 >= 30 {
				return i, e
			}
		}
		if e, ok := sc.prefixed(i, "github_pat_", clsTokenWord, 22); ok {
			return i, e
		}
		if e, ok := sc.prefixed(i, "glpat-", clsURL64, 20); ok {
			return i, e
		}
	case 's':
		if strings.HasPrefix(t, "sk-") {
			// OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic
			// (sk-ant-api03-, sk-ant-admin01-) keys. Demanding two character
			// classes keeps "sk-learn-docs" out.
			if e := sc.runEnd(i+3, clsURL64); e-i-3 >= 20 && sc.classesFrom(i+3, clsURL64) >= 2 {
				return i, e
			}
		}
		for _, p := range [...]string{"sk_live_", "sk_test_"} {
			if e, ok := sc.prefixed(i, p, clsAlnum, 16); ok {
				return i, e
			}
		}
		for _, p := range [...]string{"shpat_", "shpss_", "shpca_", "shppa_"} {
			if e, ok := sc.prefixed(i, p, clsHex, 32); ok {
				return i, e
			}
		}
	case 'r':
		for _, p := range [...]string{"rk_live_", "rk_test_"} {
			if e, ok := sc.prefixed(i, p, clsAlnum, 16); ok {
				return i, e
			}
		}
	case 'w':
		if e, ok := sc.prefixed(i, "whsec_", clsStd64, 24); ok {
			return i, e
		}
	case 'p':
		if e, ok := sc.prefixed(i, "pypi-AgEIcHlwaS5vcmc", clsURL64, 40); ok {
			return i, e
		}
	case 'x':
		// xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxo-, xoxe- and the
		// configuration tokens "xoxe.xoxp-…".
		if len(t) >= 5 && strings.HasPrefix(t, "xox") && strings.IndexByte("abposre", t[3]) >= 0 && (t[4] == '-' || t[4] == '.') {
			if e := sc.runEnd(i+5, clsSlackWord); e-i-5 >= 10 {
				return i, e
			}
		}
		if e, ok := sc.prefixed(i, "xapp-", clsSlackWord, 10); ok {
			return i, e
		}
	case 'e':
		return sc.jwtAt(i)
	case '-':
		if a, e := sc.pemAt(i); e > a {
			return a, e
		}
		return sc.flagAt(i)
	case 'n':
		if e, ok := sc.prefixed(i, "npm_", clsAlnum, 36); ok {
			return i, e
		}
	case 'h':
		if e, ok := sc.prefixed(i, "hf_", clsAlnum, 30); ok {
			return i, e
		}
		if strings.HasPrefix(t, "hooks.slack.com/") {
			a := i + len("hooks.slack.com/")
			if e := sc.runEnd(a, clsTokenWord|clsStd64); e-a >= 20 {
				return a, e
			}
		}
	case 'S':
		if strings.HasPrefix(t, "SG.") {
			e := sc.runEnd(i+3, clsURL64)
			if e-i-3 >= 16 && e < len(s) && s[e] == '.' {
				if e2 := sc.runEnd(e+1, clsURL64); e2-e-1 >= 16 {
					return i, e2
				}
			}
		}
	case 'y':
		if e, ok := sc.prefixed(i, "ya29.", clsURL64, 20); ok {
			return i, e
		}
	case 'G':
		if e, ok := sc.prefixed(i, "GOCSPX-", clsURL64, 20); ok {
			return i, e
		}
	case 'd':
		for _, p := range [...]string{"dop_v1_", "doo_v1_", "dor_v1_"} {
			if e, ok := sc.prefixed(i, p, clsHex, 64); ok {
				return i, e
			}
		}
		if e, ok := sc.prefixed(i, "dapi", clsHex, 32); ok {
			return i, e
		}
	case 'B', 'b':
		return sc.bearerAt(i)
	case ':':
		if strings.HasPrefix(t, "://") {
			return sc.userinfoAt(i + 3)
		}
		return sc.assignmentAt(i)
	case '=':
		return sc.assignmentAt(i)
	}
	return i, i
}

// prefixed matches prefix at s[i] followed by at least min bytes of class
// cls, and returns the end of that run.
func (sc *scanner) prefixed(i int, prefix string, cls uint8, min int) (int, bool) {
	s := sc.s
	if !strings.HasPrefix(s[i:], prefix) {
		return 0, false
	}
	a := i + len(prefix)
	e := sc.runEnd(a, cls)
	return e, e-a >= min
}

// scanner is the state of one scan over s: a cache of the last run seen
// per byte class, so that a rule firing again and again inside one long
// run ("sk-sk-sk-…", "AKIAAKIA…") costs O(1) per firing instead of a rescan
// of the run, which would make hostile input quadratic.
type scanner struct {
	s     string
	depth int   // nesting of widen
	valid uint8 // bit k set when runs[k] holds a run of class 1<<k
	runs  [8]runInfo
}

// runInfo is a maximal run [start, end) of one class, with the last index
// of an upper-case letter, a lower-case letter and a digit in it (-1: none).
type runInfo struct{ start, end, up, lo, dg int }

// runEnd returns the end of the run of class cls that starts at s[i].
func (sc *scanner) runEnd(i int, cls uint8) int {
	return sc.run(i, cls).end
}

func (sc *scanner) run(i int, cls uint8) runInfo {
	k := bits.TrailingZeros8(cls)
	if cls&(cls-1) != 0 {
		k = -1 // a union of classes: not cached
	}
	if k >= 0 && sc.valid&cls != 0 {
		if r := sc.runs[k]; r.start <= i && i <= r.end {
			return r
		}
	}
	s := sc.s
	r := runInfo{start: i, up: -1, lo: -1, dg: -1}
	for ; i < len(s) && class[s[i]]&cls != 0; i++ {
		switch c := s[i]; {
		case isUpper(c):
			r.up = i
		case isLower(c):
			r.lo = i
		case c >= '0' && c <= '9':
			r.dg = i
		}
	}
	r.end = i
	if k >= 0 {
		sc.runs[k] = r
		sc.valid |= cls
	}
	return r
}

// classesFrom counts the character classes (upper, lower, digit) in the
// run of class cls from a to its end.
func (sc *scanner) classesFrom(a int, cls uint8) int {
	r := sc.run(a, cls)
	n := 0
	for _, last := range [...]int{r.up, r.lo, r.dg} {
		if last >= a {
			n++
		}
	}
	return n
}

// digitFrom reports whether the run of class cls from a holds a digit.
func (sc *scanner) digitFrom(a int, cls uint8) bool {
	return sc.run(a, cls).dg >= a
}

func awsKeyIDPrefix(p string) bool {
	switch p {
	case "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA":
		return true
	}
	return p[1] == '3' && p[2] == 'T' && class[p[3]]&clsUpperDigit != 0
}

func hasDigit(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			return true
		}
	}
	return false
}

// classes counts how many of upper case, lower case and digits occur in s.
func classes(s string) int {
	var up, lo, dg int
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isUpper(c):
			up = 1
		case isLower(c):
			lo = 1
		case c >= '0' && c <= '9':
			dg = 1
		}
	}
	return up + lo + dg
}

// awsSecretShape reports whether a 40-byte [A-Za-z0-9+/] token looks like
// an AWS secret access key: all three character classes and a Shannon
// entropy of at least 4 bits per byte. A git SHA-1 (hex, no upper case) and
// ordinary 40-character paths or words fail this.
func awsSecretShape(t string) bool {
	if classes(t) < 3 {
		return false
	}
	var counts [128]uint8
	for i := 0; i < len(t); i++ {
		counts[t[i]&127]++
	}
	var h float64
	n := float64(len(t))
	for _, c := range counts {
		if c != 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h >= 4.0
}

// jwtAt matches a JSON Web Token (or JWS/JWE): a base64url segment starting
// "eyJ" (an encoded '{"'), then at least one more '.'-separated segment.
func (sc *scanner) jwtAt(i int) (int, int) {
	s := sc.s
	if !strings.HasPrefix(s[i:], "eyJ") {
		return i, i
	}
	e := sc.runEnd(i, clsURL64)
	if e-i < 10 || e >= len(s) || s[e] != '.' {
		return i, i
	}
	e2 := sc.runEnd(e+1, clsURL64)
	if e2-e-1 < 2 {
		return i, i
	}
	for seg := 2; seg < 5 && e2 < len(s) && s[e2] == '.'; seg++ {
		e2 = sc.runEnd(e2+1, clsURL64)
	}
	return i, e2
}

// pemAt matches a PEM (or PGP armored) private key block from its BEGIN
// line to the end of its END line, or to the end of s when the END line is
// missing (a truncated key is still a key).
func (sc *scanner) pemAt(i int) (int, int) {
	s := sc.s
	const begin = "-----BEGIN "
	if !strings.HasPrefix(s[i:], begin) {
		return i, i
	}
	h := i + len(begin)
	hend := strings.Index(s[h:min(len(s), h+80)], "-----")
	if hend < 0 || !strings.Contains(s[h:h+hend], "PRIVATE KEY") {
		return i, i
	}
	body := h + hend + 5
	end := strings.Index(s[body:], "-----END ")
	if end < 0 {
		return i, len(s)
	}
	tail := body + end + len("-----END ")
	if close := strings.Index(s[tail:min(len(s), tail+80)], "-----"); close >= 0 {
		return i, tail + close + 5
	}
	return i, len(s)
}

// flagAt matches command-line credentials given as separate arguments:
// the value after "--password ", "--api-key ", "--token " (any option
// whose name is secret by sensitiveName; "--name=value" is an assignment),
// and the password in "-u user:password" and "--user user:password"
// (curl, wget and friends).
func (sc *scanner) flagAt(i int) (int, int) {
	s := sc.s
	if i > 0 && s[i-1] != ' ' && s[i-1] != '\t' && s[i-1] != '"' && s[i-1] != '\'' {
		return i, i
	}
	n := i + 1
	for n < len(s) && s[n] == '-' && n < i+2 {
		n++
	}
	ne := n
	for ne < len(s) && (isAlnum(s[ne]) || s[ne] == '-' || s[ne] == '_') {
		ne++
	}
	if ne >= len(s) || ne == n || (s[ne] != ' ' && s[ne] != '\t') {
		return i, i
	}
	name := s[n:ne]
	userFlag := name == "u" && n == i+1 || name == "user" && n == i+2
	if !userFlag && (n != i+2 || !sensitiveName(name)) {
		return i, i
	}
	a := ne
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	if a >= len(s) {
		return i, i
	}
	q := s[a]
	if q == '"' || q == '\'' {
		a++
	} else {
		q = 0
	}
	if startsWithMarker(s[a:]) {
		return i, i // checked before the value is measured, so this costs O(1)
	}
	e := a
	for e < len(s) && s[e] != '\n' && (q != 0 && s[e] != q || q == 0 && s[e] != ' ' && s[e] != '\t' && s[e] != '\r' && s[e] != '"' && s[e] != '\'') {
		e++
	}
	if userFlag {
		colon := strings.IndexByte(s[a:e], ':')
		if colon < 0 || startsWithMarker(s[a+colon+1:e]) {
			return i, i
		}
		a += colon + 1
	}
	if e <= a {
		return i, i
	}
	return a, sc.widen(a, e)
}

// bearerAt matches the credential after "Bearer " (any case). To keep
// prose ("the bearer of bad news") intact, the credential must be at least
// 8 bytes of RFC 6750 b64token and either contain a non-letter or be 20
// bytes or longer.
func (sc *scanner) bearerAt(i int) (int, int) {
	s := sc.s
	if len(s)-i < 8 || !strings.EqualFold(s[i:i+6], "bearer") || (i > 0 && isAlnum(s[i-1])) {
		return i, i
	}
	a := i + 6
	if s[a] != ' ' && s[a] != '\t' {
		return i, i
	}
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	e := sc.runEnd(a, clsBearer)
	if e-a < 8 || startsWithMarker(s[a:]) {
		return i, i
	}
	if e-a < 20 && !hasDigit(s[a:e]) && !hasNonAlnum(s[a:e]) {
		return i, i
	}
	return a, sc.widen(a, e)
}

func hasNonAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) {
			return true
		}
	}
	return false
}

// userinfoAt matches the password of "scheme://user:password@host". a is
// the index just after "://".
func (sc *scanner) userinfoAt(a int) (int, int) {
	s := sc.s
	at := -1
	e := a
	for ; e < len(s) && e-a < 512; e++ {
		c := s[e]
		if c == '@' {
			at = e
			continue
		}
		if c == '/' || c == '?' || c == '#' || c <= ' ' || c == '"' || c == '\'' || c == '`' || c == '<' || c == '>' || c == '\\' {
			break
		}
	}
	if at < 0 {
		return a, a
	}
	colon := strings.IndexByte(s[a:at], ':')
	if colon < 0 || a+colon+1 == at || isMarker(s[a+colon+1:at]) || isMarker(s[a:at]) {
		return a, a
	}
	// The scan resumes after the password, so a token used as the user
	// name ("https://ghp_…:x-oauth-basic@github.com") would never be seen:
	// then the whole user information goes.
	if sc.anyIn(a, a+colon) {
		return a, sc.widen(a, at)
	}
	return a + colon + 1, sc.widen(a+colon+1, at)
}

// anyIn reports whether a secret starts in s[a:e].
func (sc *scanner) anyIn(a, e int) bool {
	s := sc.s
	for j := a; j < e; j++ {
		c := s[j]
		if !firstByte[c] {
			continue
		}
		var n byte
		if j+1 < len(s) {
			n = s[j+1]
		}
		if pairTrig[int(c)<<8|int(n)] {
			if x, y := sc.find(j); y > x {
				return true
			}
		}
	}
	return e-a == 40 && awsSecretShape(s[a:e])
}

// assignmentAt matches the value in "name = value", "name: value",
// "name := value", "name => value", "\"name\": \"value\"" and the same with
// JSON-escaped quotes, when name is secret by sensitiveName. i is the index
// of the ':' or '='.
func (sc *scanner) assignmentAt(i int) (int, int) {
	s := sc.s
	sep := i + 1
	if s[i] == '=' {
		if i > 0 && strings.IndexByte(":=!<>", s[i-1]) >= 0 {
			return i, i // second byte of ":=", "==", "!=", "<=", ">="
		}
		if sep < len(s) && s[sep] == '=' {
			return i, i // "=="
		}
	}
	if sep < len(s) && (s[sep] == '>' && s[i] == '=' || s[sep] == '=' && s[i] == ':') {
		sep++ // "=>", ":="
	}
	// The name: skip closing quotes, escapes and blanks, then take the
	// identifier.
	j := i - 1
	for k := 0; k < 4 && j >= 0 && (s[j] == '"' || s[j] == '\'' || s[j] == '`' || s[j] == '\\' || s[j] == ' ' || s[j] == '\t'); k++ {
		j--
	}
	n := j
	for n >= 0 && j-n < 64 && (isAlnum(s[n]) || s[n] == '_' || s[n] == '-' || s[n] == '.') {
		n--
	}
	if n == j || !sensitiveName(s[n+1:j+1]) {
		return i, i
	}
	wholeLine := hasSuffixFold(s[n+1:j+1], "cookie") || hasSuffixFold(s[n+1:j+1], "authorization")
	// The value.
	a := sep
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	if a >= len(s) {
		return i, i
	}
	// "Authorization: Bearer x": redact the credential, not the scheme.
	a = schemeEnd(s, a)
	if v := s[a:]; startsWithMarker(v) || len(v) > 2 && v[0] == '\\' && startsWithMarker(v[2:]) || len(v) > 1 && strings.IndexByte("\"'`", v[0]) >= 0 && startsWithMarker(v[1:]) {
		return i, i // already redacted; checked before the value is measured, so that this costs O(1)
	}
	var e int
	switch {
	case s[a] == '\\' && a+1 < len(s) && s[a+1] == '"':
		a += 2
		e = strings.Index(s[a:], `\"`)
		if e < 0 {
			e = lineEnd(s, a)
		} else {
			e += a
		}
	case s[a] == '"' || s[a] == '\'' || s[a] == '`':
		q := s[a]
		a++
		e = a
		for e < len(s) && s[e] != q && s[e] != '\n' {
			if s[e] == '\\' {
				e++
			}
			e++
		}
		e = min(e, len(s))
	case s[a] == '{' || s[a] == '[':
		return i, i // a structure: its own names are checked as the scan goes on
	case s[a] == '|' || s[a] == '>':
		// A YAML block scalar ("password: |"): the value is on the lines below.
		ba, be, ok := yamlBlock(s, n+1, a)
		if !ok || isMarker(s[ba:be]) {
			return i, i
		}
		return ba, sc.widen(ba, be)
	case wholeLine:
		e = lineEnd(s, a)
	default:
		e = a
		for e < len(s) && !valueStop(s[e]) {
			e++
		}
	}
	if e <= a {
		return i, i
	}
	switch v := s[a:e]; {
	case v == "null", v == "true", v == "false", v == "None", v == "nil":
		return i, i
	}
	return a, sc.widen(a, e)
}

// yamlBlock finds the block scalar introduced by the indicator at s[ind]
// ("|", "|-", ">+", …) for the key starting at nameAt: the lines after the
// indicator's line that are blank or indented deeper than the key's line.
// The span runs from the first non-blank byte of those lines to the end of
// the last non-blank one, so the indentation stays.
func yamlBlock(s string, nameAt, ind int) (start, end int, ok bool) {
	lineStart := strings.LastIndexByte(s[:nameAt], '\n') + 1
	indent := 0
	for p := lineStart; p < nameAt && (s[p] == ' ' || s[p] == '-'); p++ {
		indent++
	}
	p := ind + 1
	for p < len(s) && (s[p] == '-' || s[p] == '+' || (s[p] >= '1' && s[p] <= '9') || s[p] == ' ' || s[p] == '\t' || s[p] == '\r') {
		p++
	}
	if p >= len(s) || s[p] != '\n' {
		return 0, 0, false
	}
	start = p + 1
	end = start
	for q := start; q < len(s); {
		le := strings.IndexByte(s[q:], '\n')
		if le < 0 {
			le = len(s)
		} else {
			le += q
		}
		k := q
		for k < le && s[k] == ' ' {
			k++
		}
		blank := strings.TrimSpace(s[k:le]) == ""
		if !blank && k-q <= indent {
			break
		}
		if !blank {
			end = le
		}
		q = le + 1
	}
	for start < end && (s[start] == ' ' || s[start] == '\n' || s[start] == '\r') {
		start++
	}
	return start, end, end > start
}

// startsWithMarker reports whether s begins with a redaction marker, so
// that scanning sanitized text again leaves the markers alone.
func startsWithMarker(s string) bool {
	return len(s) >= markerLen && isMarker(s[:markerLen])
}

func valueStop(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ',', ';', '&', '"', '\'', '`', '}', ']', ')', '<', '>', '\\':
		return true
	}
	return false
}

func lineEnd(s string, a int) int {
	for e := a; e < len(s); e++ {
		if c := s[e]; c == '\n' || c == '\r' || c == '"' || c == '\\' {
			return e
		}
	}
	return len(s)
}

// schemeEnd returns the index after "Scheme " when s[a:] starts with an
// HTTP authentication scheme followed by blanks and a credential, else a.
func schemeEnd(s string, a int) int {
	w := a
	for w < len(s) && (isLower(s[w]) || isUpper(s[w])) {
		w++
	}
	if w == a || w >= len(s) || s[w] != ' ' {
		return a
	}
	known := false
	for _, scheme := range authSchemes {
		if strings.EqualFold(s[a:w], scheme) {
			known = true
			break
		}
	}
	if !known {
		return a
	}
	for w < len(s) && s[w] == ' ' {
		w++
	}
	if w >= len(s) || valueStop(s[w]) {
		return a
	}
	return w
}

var authSchemes = []string{"bearer", "basic", "token", "digest", "bot", "negotiate", "ntlm", "apikey", "key"}

// widen returns the end of a context-found span [a, e) (a value after a
// name, a bearer credential, a URL password), pushed out to cover any
// secret that starts inside the span and runs past e: a PEM block whose
// first line ends a quoted value, or the credential after a "Bearer" or a
// "token:" that the span swallowed (whose context the main loop will
// never see). Positions inside an earlier find are skipped, so the cost
// stays linear; spans nested deeper than maxWiden fail closed and run to
// the end of the text.
func (sc *scanner) widen(a, e int) int {
	s := sc.s
	if sc.depth >= maxWiden {
		return len(s)
	}
	sc.depth++
	end := e
	for j := a; j < e; j++ {
		c := s[j]
		if !firstByte[c] {
			continue
		}
		var n byte
		if j+1 < len(s) {
			n = s[j+1]
		}
		if !pairTrig[int(c)<<8|int(n)] {
			continue
		}
		if x, y := sc.find(j); y > x {
			end = max(end, y)
			j = y - 1
		}
	}
	sc.depth--
	return end
}

// maxWiden bounds the nesting of widen: "token: token: token: …" nests
// one level per name.
const maxWiden = 8
