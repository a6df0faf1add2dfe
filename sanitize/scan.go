package sanitize

import (
	"math"
	"math/bits"
	"slices"
	"strings"
)

// The scanner walks a string once. A table of byte pairs, read eight
// positions at a time, then the pair's trigger (which third bytes may
// follow, whether a word boundary must precede) decide whether any rule
// can start at a byte; only then are the pair's matchers run: hand-written ones
// (matchRules) and table-driven shapes (shapes.go). No regular expression
// runs on the hot path. Rules either have a fixed prefix (ghp_, AKIA, eyJ,
// -----BEGIN …), a mark inside them ("Q~", ".atlasv1."), or a context (a
// secret-looking name before ':' or '=', "user:pass@host", "Bearer ", an
// XML element); runs of base64 or hex bytes are checked when they end,
// for an AWS secret access key (a 40-byte piece) or an encoded secret
// (encoded.go).

// Byte classes. Each is one bit, so that the scanner can cache the last
// run it measured of each (see scanner.run).
const (
	clsUpperDigit = 1 << iota // A-Z 0-9
	clsAlnum                  // A-Z a-z 0-9
	clsURL64                  // A-Z a-z 0-9 _ -
	clsStd64                  // A-Z a-z 0-9 + /
	clsHex                    // 0-9 a-f
	clsTokenWord              // A-Z a-z 0-9 _
	clsBearer                 // A-Z a-z 0-9 - . _ ~ + / =  (RFC 6750 b64token)
	clsSlackWord              // A-Z a-z 0-9 -
	clsHexAny                 // 0-9 a-f A-F
	clsURL64Eq                // A-Z a-z 0-9 _ - =
	clsWordDotEq              // A-Z a-z 0-9 _ - . =
	clsAzure                  // A-Z a-z 0-9 _ - . ~
	clsDigit                  // 0-9
	clsB64Any                 // A-Z a-z 0-9 + / _ -  (either base64 alphabet)
	clsLowerDigit             // a-z 0-9
)

// numClasses is the number of byte classes above.
const numClasses = 15

var (
	class     [256]uint16
	firstByte [256]bool
	// pairTrig maps a byte pair to an index into trigs (0: no rule starts
	// with this pair).
	pairTrig [1 << 16]uint8
	trigs    = []trigger{{}}
)

// trigger says which third bytes can follow a pair at the start of a rule,
// and whether every rule starting with the pair needs a word boundary
// before it, so that most non-matches are rejected in the main loop.
type trigger struct {
	third  [4]uint64
	bound  bool
	shapes []uint16 // the shapes (indexes into shapes) starting with the pair
}

func (t *trigger) allows(c byte) bool { return t.third[c>>6]&(1<<(c&63)) != 0 }

// trig registers a rule starting with the bytes c1, c2 and then one of
// third (any byte when third is empty). bound says the rule needs a word
// boundary before c1. It returns the pair's trigger.
func trig(c1, c2 byte, third string, bound bool) *trigger {
	k := pairTrig[int(c1)<<8|int(c2)]
	if k == 0 {
		if len(trigs) == 256 {
			panic("sanitize: too many trigger pairs")
		}
		k = uint8(len(trigs))
		trigs = append(trigs, trigger{bound: true})
		pairTrig[int(c1)<<8|int(c2)] = k
	}
	t := &trigs[k]
	t.bound = t.bound && bound
	if third == "" {
		t.third = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	}
	for i := 0; i < len(third); i++ {
		t.third[third[i]>>6] |= 1 << (third[i] & 63)
	}
	firstByte[c1] = true
	return t
}

// trigShared registers c1 followed by any byte of next (all bytes when
// next is empty), any third byte, as one trigger shared by all the pairs.
func trigShared(c1 byte, next string) {
	k := uint8(len(trigs))
	trigs = append(trigs, trigger{third: [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}})
	for n := 0; n < 256; n++ {
		if next == "" || strings.IndexByte(next, byte(n)) >= 0 {
			if pairTrig[int(c1)<<8|n] != 0 {
				panic("sanitize: shared trigger over an existing one")
			}
			pairTrig[int(c1)<<8|n] = k
		}
	}
	firstByte[c1] = true
}

// trigPrefix registers a rule whose text starts with prefix (folded: in
// either case); shape, when not negative, is the index of the shape that
// the pairs' triggers then list.
func trigPrefix(prefix string, fold, bound bool, shape int) {
	if len(prefix) < 2 {
		panic("sanitize: prefix shorter than two bytes: " + prefix)
	}
	third := ""
	if len(prefix) >= 3 {
		third = prefix[2:3]
		if fold {
			third = string([]byte{lowerByte(prefix[2]), upperByte(prefix[2])})
		}
	}
	c1s, c2s := []byte{prefix[0]}, []byte{prefix[1]}
	if fold {
		c1s = []byte{lowerByte(prefix[0]), upperByte(prefix[0])}
		c2s = []byte{lowerByte(prefix[1]), upperByte(prefix[1])}
	}
	for _, c1 := range c1s {
		for _, c2 := range c2s {
			t := trig(c1, c2, third, bound)
			if shape >= 0 && !slices.Contains(t.shapes, uint16(shape)) {
				t.shapes = append(t.shapes, uint16(shape))
			}
		}
	}
}

func lowerByte(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

func upperByte(c byte) byte {
	if isLower(c) {
		return c - ('a' - 'A')
	}
	return c
}

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		up, lo, dg := isUpper(b), isLower(b), b >= '0' && b <= '9'
		var k uint16
		if up || dg {
			k |= clsUpperDigit
		}
		if up || lo || dg {
			k |= clsAlnum | clsURL64 | clsStd64 | clsTokenWord | clsBearer | clsSlackWord |
				clsURL64Eq | clsWordDotEq | clsAzure | clsB64Any
		}
		if dg || (b >= 'a' && b <= 'f') {
			k |= clsHex
		}
		if dg || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F') {
			k |= clsHexAny
		}
		if dg {
			k |= clsDigit
		}
		if dg || lo {
			k |= clsLowerDigit
		}
		switch b {
		case '_':
			k |= clsURL64 | clsTokenWord | clsBearer | clsURL64Eq | clsWordDotEq | clsAzure | clsB64Any
		case '-':
			k |= clsURL64 | clsBearer | clsSlackWord | clsURL64Eq | clsWordDotEq | clsAzure | clsB64Any
		case '+', '/':
			k |= clsStd64 | clsBearer | clsB64Any
		case '.':
			k |= clsBearer | clsWordDotEq | clsAzure
		case '~':
			k |= clsBearer | clsAzure
		case '=':
			k |= clsBearer | clsURL64Eq | clsWordDotEq
		}
		class[c] = k
	}
	// The hand-written rules, with the third bytes they can have.
	for _, p := range []string{"AKI", "ASI", "ABI", "ACC", "AGP", "AID", "ARO", "AIP", "ANP", "ANV", "APK", "A3T"} {
		trigPrefix(p, false, false, -1) // AWS key ids
	}
	trig('s', 'k', "-", false)   // sk-… (OpenAI, Anthropic)
	trig('x', 'o', "x", false)   // xox?-
	trig('x', 'a', "p", false)   // xapp-
	trig('e', 'y', "J", false)   // eyJ (JWT)
	trig('e', 'y', "", true)     // ey….ey… (what gitleaks takes for a JWT)
	trig('-', '-', "", false)    // -----BEGIN … PRIVATE KEY, --password x
	trig('-', 'u', " \t", false) // -u user:pass
	trig('h', 'o', "o", false)   // hooks.slack.com
	trig('S', 'G', ".", false)   // SG. (SendGrid)
	for _, p := range []string{"Bea", "BEA", "bea", "bEa", "BeA", "bEA", "beA", "BEa"} {
		trigPrefix(p, false, true, -1) // Bearer, any case
	}
	trig('w', 'e', "b", false)                                                          // webhook.office.com (Teams)
	trigShared('|', "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") // Facebook app tokens "id|secret"
	trigShared(':', "")                                                                 // name: value, scheme://, user:password@host
	trigShared('=', "")                                                                 // name=value
	// `"NAME", "value"` (setProperty and friends) and <name>value</name>.
	trig('"', ',', "", false)
	trig('\'', ',', "", false)
	trigShared('<', "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
	for i := range shapes {
		shapes[i].register(i)
	}
	initFilters()
}

// next returns the first secret span [start, end) of sc.s with start >=
// from. It never allocates.
//
// The two things that can happen at a byte are looked for apart, each
// over the text once: a byte pair that can start a rule (in pairStart,
// looked up for eight positions at a time), and the end of a run of
// base64 bytes long enough to check (nextLongRun, whose answer is kept in
// the scanner). They are
// handled in the order of the text, a run ending at a byte before a rule
// starting there.
func (sc *scanner) next(from int) (start, end int, ok bool) {
	s := sc.s
	sc.from = from
	sc.longRunAfter(from)
	for g := max(from, 0); g < len(s); g += 8 {
		var hits uint8
		if g+9 <= len(s) {
			// Bit k: a rule can start at g+k (see pairHits).
			t := s[g : g+9]
			w := uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24 |
				uint64(t[4])<<32 | uint64(t[5])<<40 | uint64(t[6])<<48 | uint64(t[7])<<56
			hits = pairStart[uint16(w)]&1 | pairStart[uint16(w>>8)]&1<<1 | pairStart[uint16(w>>16)]&1<<2 |
				pairStart[uint16(w>>24)]&1<<3 | pairStart[uint16(w>>32)]&1<<4 | pairStart[uint16(w>>40)]&1<<5 |
				pairStart[uint16(w>>48)]&1<<6 | pairStart[uint16(w>>56)|uint16(t[8])<<8]&1<<7
		} else {
			hits = pairHits(s, g)
		}
		for ; hits != 0; hits &= hits - 1 {
			i := g + bits.TrailingZeros8(hits)
			for sc.runTo <= i {
				if a, e := sc.runAt(sc.runFrom, sc.runTo); e > a {
					return a, e, true
				}
				sc.nextLongRun(sc.runTo+1, false)
			}
			if k := pairStart[uint16(s[i])|uint16(s[i+1])<<8] >> 1; openTrig[k>>6]&(1<<(k&63)) == 0 {
				var n3 byte
				if i+2 < len(s) {
					n3 = s[i+2]
				}
				if t := &trigs[k]; !t.allows(n3) || t.bound && i > 0 && isWordByte(s[i-1]) {
					continue
				}
			}
			if a, e := sc.find(i); e > a {
				return a, e, true
			}
		}
	}
	for sc.runTo <= len(s) {
		if a, e := sc.runAt(sc.runFrom, sc.runTo); e > a {
			return a, e, true
		}
		sc.nextLongRun(sc.runTo+1, false)
	}
	return 0, 0, false
}

// pairHits returns the positions g+k (bit k, k < 8) at which a byte pair
// that can start a rule begins, one pair at a time: for the last bytes of
// the text, which next cannot read eight (and one) at a time.
func pairHits(s string, g int) uint8 {
	var hits uint8
	for k := 0; k < 8 && g+k+1 < len(s); k++ {
		hits |= pairStart[uint16(s[g+k])|uint16(s[g+k+1])<<8] & 1 << k
	}
	return hits
}

// longRunAfter makes sc.runFrom, sc.runTo the first run of at least
// minRunCheck base64 bytes that ends at or after from and does not begin
// before it (a run that does is not checked: the scan that reached it
// decided about it). The run found last is reused when it still fits.
func (sc *scanner) longRunAfter(from int) {
	switch {
	case sc.runScanned && sc.runScan <= from && from <= sc.runFrom:
		return // no long run ends between from and this one
	case sc.runScanned && sc.runScan <= from && from <= sc.runTo:
		sc.nextLongRun(sc.runTo+1, false) // from is inside the run: skip it
		return
	}
	sc.nextLongRun(from, from > 0 && runBit[sc.s[from-1]] != 0)
}

// nextLongRun sets sc.runFrom, sc.runTo to the first run [runFrom, runTo)
// of at least minRunCheck base64 bytes that begins at or after i, after
// the rest of the run that s[i] continues when skip is set (else s[i-1]
// must not be a base64 byte). runTo is len(s)+1 when there is none.
func (sc *scanner) nextLongRun(i int, skip bool) {
	s := sc.s
	sc.runScanned, sc.runScan = true, i
	if skip {
		for i < len(s) && runBit[s[i]] != 0 {
			i++
		}
		i++ // past the byte that ends the run
	}
	// Such a run holds all eight bytes of one of the blocks
	// s[i+8k:i+8k+8] (it is 16 bytes or longer): only blocks of base64
	// bytes are looked at closer.
	for g := i; g+8 <= len(s); g += 8 {
		t := s[g : g+8]
		if runBit[t[0]]&runBit[t[1]]&runBit[t[2]]&runBit[t[3]]&runBit[t[4]]&runBit[t[5]]&runBit[t[6]]&runBit[t[7]] == 0 {
			continue
		}
		a, e := g, g+8
		for a > i && runBit[s[a-1]] != 0 {
			a--
		}
		for e < len(s) && runBit[s[e]] != 0 {
			e++
		}
		if e-a >= minRunCheck {
			sc.runFrom, sc.runTo = a, e
			return
		}
		g = e + 1 - 8 // the blocks start again after the run
	}
	sc.runFrom, sc.runTo = len(s)+1, len(s)+1
}

// runBit and pairStart are the main loop's filters: per byte, 1 when it
// is part of a base64 run ([A-Za-z0-9+/_-]); per byte pair (the first byte
// in the low half of the index), 0 when no rule starts with it, else its
// trigger's index in trigs times two plus one (so bit 0 says whether a
// rule can start, and the trigger is read from the same cache line). Text
// uses few of the pairs, so the part of pairStart in use stays in the
// first-level cache.
var (
	runBit    [256]uint8
	pairStart [1 << 16]uint8
	// openTrig has bit k set when trigs[k] takes any third byte and
	// needs no word boundary (":", "=", …: most of the hits in text),
	// which the main loop then need not look up.
	openTrig [2]uint64
)

func initFilters() {
	if len(trigs) > 128 {
		panic("sanitize: too many trigger pairs for pairStart")
	}
	for c := 0; c < 256; c++ {
		if class[c]&clsB64Any != 0 {
			runBit[c] = 1
		}
	}
	for p, k := range pairTrig {
		if k != 0 {
			pairStart[p>>8|p&0xff<<8] = k<<1 | 1
		}
	}
	for k := range trigs {
		if t := &trigs[k]; k > 0 && !t.bound && t.third == [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} {
			openTrig[k>>6] |= 1 << (k & 63)
		}
	}
}

// triggered reports whether a rule may start at s[j] (the main loop's
// filter, for widen and anyIn).
func triggered(s string, j int) bool {
	c := s[j]
	if !firstByte[c] {
		return false
	}
	var n, n3 byte
	if j+1 < len(s) {
		n = s[j+1]
		if j+2 < len(s) {
			n3 = s[j+2]
		}
	}
	k := pairTrig[int(c)<<8|int(n)]
	return k != 0 && trigs[k].allows(n3)
}

func isWordByte(c byte) bool { return wordBytes[c] }

// wordBytes holds, for every byte, whether it is [A-Za-z0-9_].
var wordBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isAlnum(byte(c)) || c == '_'
	}
	return t
}()

// find is matchAt with shape spans widened: a shape span ends at its class
// boundary, and another secret glued on ("ghp_…sk_live_…") may start
// inside it. Context rules widen their own spans.
func (sc *scanner) find(i int) (start, end int) {
	a, e, ctx := sc.matchAt(i)
	if e <= a || ctx {
		return a, e
	}
	from := a
	if a == i {
		from = a + 1 // the rule that matched at i would only match again
	}
	return a, sc.widen(from, e)
}

// matchAt runs the rules triggered at s[i]. It returns an empty span when
// none matches. A non-empty span starts at or after sc.from (most start at
// i; a few shapes are recognised by a mark inside them, "Q~" or "_mmk").
// ctx reports a context rule (a value after a name, a credential after
// "Bearer", a URL password), which widens its own span.
func (sc *scanner) matchAt(i int) (start, end int, ctx bool) {
	a, e, ctx := sc.matchRules(i)
	if e > a {
		return a, e, ctx
	}
	var n byte
	if i+1 < len(sc.s) {
		n = sc.s[i+1]
	}
	for _, k := range trigs[pairTrig[int(sc.s[i])<<8|int(n)]].shapes {
		if a, e := shapes[k].match(sc, i); e > a && a >= sc.from {
			return a, e, false
		}
	}
	return i, i, false
}

// matchRules runs the hand-written rules that can start at s[i]: those
// with more than a prefix and runs of one class (see shapes for those).
func (sc *scanner) matchRules(i int) (start, end int, ctx bool) {
	s := sc.s
	t := s[i:]
	switch s[i] {
	case 'A':
		if len(t) >= 4 && awsKeyIDPrefix(t[:4]) {
			e := sc.runEnd(i+4, clsUpperDigit)
			if n := e - i - 4; (n == 16 || (n > 16 && sc.digitFrom(i+4, clsUpperDigit))) && !strings.HasSuffix(s[i:e], "EXAMPLE") && !placeholder(s[i+4:e]) {
				return i, e, false
			}
		}
	case 's':
		if strings.HasPrefix(t, "sk-") {
			// OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic
			// (sk-ant-api03-, sk-ant-admin01-) keys. Demanding two character
			// classes keeps "sk-learn-docs" out.
			if e := sc.runEnd(i+3, clsURL64); e-i-3 >= 20 && sc.classesFrom(i+3, clsURL64) >= 2 && !placeholder(s[i+3:e]) && anthropicShape(s[i:e]) {
				return i, e, false
			}
		}
	case 'x':
		// xoxb-, xoxp-, xoxa-, xoxr-, xoxs-, xoxo-, xoxe- and the
		// configuration tokens "xoxe.xoxp-…": every real one has a digit
		// in its first part ("xoxb-12…", "xoxe.xoxp-1-…").
		p := i
		if strings.HasPrefix(t, "xoxe.xox") {
			p += 5
		}
		if u := s[p:]; len(u) >= 6 && strings.HasPrefix(u, "xox") && strings.IndexByte("abposre", u[3]) >= 0 && u[4] == '-' {
			e := sc.runEnd(p+5, clsSlackWord)
			for e > p+5 && s[e-1] == '-' {
				e-- // a dash after the token is not part of it
			}
			body := s[p+5 : e]
			// Bot and user tokens start with a team id of 8 or more
			// digits; configuration and refresh tokens ("xoxe.xoxp-1-…",
			// "xoxe-1-…") run to about 150 bytes (so
			// "xoxe.xoxp-1-RANDOMSTRINGHERE" is not one).
			long := p > i || u[3] == 'e' && leadingDigits(body) < 8
			numbered := strings.IndexByte("bp", u[3]) < 0 || p > i || leadingDigits(body) >= 8
			if len(body) >= 10 && slackBody(body) && numbered && (!long || len(body) >= 60) && (strings.IndexByte("bp", u[3]) < 0 || hasLetter(body)) {
				return i, e, false
			}
		}
		if e, ok := sc.prefixed(i, "xapp-", clsSlackWord, 10); ok && slackBody(s[i+5:e]) {
			return i, e, false
		}
	case 'e':
		a, e := sc.jwtAt(i)
		return a, e, false
	case '-':
		if a, e := sc.pemAt(i); e > a {
			return a, e, false
		}
		a, e := sc.flagAt(i)
		return a, e, true
	case 'h':
		if strings.HasPrefix(t, "hooks.slack.com/") {
			a := i + len("hooks.slack.com/")
			if e := sc.runEnd(a, clsTokenWord|clsStd64); e-a >= 20 {
				return a, e, false
			}
		}
	case 'w':
		// A Microsoft Teams incoming webhook URL: its path is the secret.
		const teams = "webhook.office.com/webhookb2/"
		if strings.HasPrefix(t, teams) {
			a := i + len(teams)
			e := a
			for e < len(s) && (isWordByte(s[e]) || s[e] == '-' || s[e] == '@' || s[e] == '/') {
				e++
			}
			if e-a >= 40 {
				return a, e, false
			}
		}
	case '|':
		a, e := sc.facebookAppToken(i)
		return a, e, false
	case 'S':
		if strings.HasPrefix(t, "SG.") {
			e := sc.runEnd(i+3, clsURL64)
			if e-i-3 >= 16 && e < len(s) && s[e] == '.' {
				if e2 := sc.runEnd(e+1, clsURL64); e2-e-1 >= 16 {
					return i, e2, false
				}
			}
		}
	case 'B', 'b':
		a, e := sc.bearerAt(i)
		return a, e, true
	case ':':
		if strings.HasPrefix(t, "://") {
			a, e := sc.userinfoAt(i + 3)
			return a, e, true
		}
		if a, e := sc.bareUserinfoAt(i); e > a {
			return a, e, true
		}
		if a, e := sc.telegramAt(i); e > a {
			return a, e, false
		}
		a, e := sc.assignmentAt(i)
		return a, e, true
	case '=':
		a, e := sc.assignmentAt(i)
		return a, e, true
	case '"', '\'':
		a, e := sc.argPairAt(i)
		return a, e, true
	case '<':
		a, e := sc.xmlAt(i)
		return a, e, true
	}
	return i, i, false
}

// anthropicShape: an "sk-ant-" key is "sk-ant-<kind>-", 93 bytes and
// "AA" (measured from the start, so that text glued after it does not
// matter); other "sk-" keys pass.
func anthropicShape(k string) bool {
	if !strings.HasPrefix(k, "sk-ant-") {
		return true
	}
	d := strings.IndexByte(k[7:], '-')
	body := 7 + d + 1
	return d > 0 && len(k) >= body+95 && k[body+93:body+95] == "AA"
}

func hasLetter(b string) bool {
	for i := 0; i < len(b); i++ {
		if isLower(b[i]) || isUpper(b[i]) {
			return true
		}
	}
	return false
}

func leadingDigits(b string) int {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	return n
}

// slackBody reports whether the part of a Slack token after "xox?-" looks
// like one: digits before its first '-' (placeholders such as
// "xoxb-xoxb-my-bot-token" or "xoxp-XXXX-…" have none).
func slackBody(b string) bool {
	d := strings.IndexByte(b, '-')
	if d < 0 {
		d = len(b)
	}
	return d > 0 && hasDigit(b[:d]) && !placeholder(b)
}

// prefixed matches prefix at s[i] followed by at least min bytes of class
// cls, and returns the end of that run.
func (sc *scanner) prefixed(i int, prefix string, cls uint16, min int) (int, bool) {
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
	s       string
	from    int // where the current search began: no span starts before
	depth   int // nesting of widen
	decode  int // nesting of encoded blobs being scanned
	passEnd int // bareUserinfoAt: where the password bytes after the last ':' seen end
	// kubernetesSecret's answer for the document [k8sFrom, k8sTo).
	k8s            bool
	k8sFrom, k8sTo int
	// The next run of base64 bytes for next to check, [runFrom, runTo),
	// found by scanning from runScan (runScanned: it has been).
	runFrom, runTo, runScan int
	runScanned              bool
	valid                   uint16 // bit k set when runs[k] holds a run of class 1<<k
	runs                    [numClasses]runInfo
}

// runInfo is a maximal run [start, end) of one class, with the last index
// of an upper-case letter, a lower-case letter and a digit in it (-1: none).
type runInfo struct{ start, end, up, lo, dg int }

// runEnd returns the end of the run of class cls that starts at s[i].
func (sc *scanner) runEnd(i int, cls uint16) int {
	if cls&(cls-1) == 0 && sc.valid&cls != 0 {
		if r := &sc.runs[bits.TrailingZeros16(cls)]; r.start <= i && i <= r.end {
			return r.end
		}
	}
	return sc.run(i, cls).end
}

func (sc *scanner) run(i int, cls uint16) runInfo {
	k := bits.TrailingZeros16(cls)
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
func (sc *scanner) classesFrom(a int, cls uint16) int {
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
func (sc *scanner) digitFrom(a int, cls uint16) bool {
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
		return sc.eyPairAt(i)
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

// eyPairAt matches what gitleaks takes for a JWT without the '{"' of a
// real one: two '.'-separated segments of at least 19 bytes that both
// start "ey", then optionally a third.
func (sc *scanner) eyPairAt(i int) (int, int) {
	s := sc.s
	if !strings.HasPrefix(s[i:], "ey") || !sc.boundaryBefore(i) {
		return i, i
	}
	e := sc.runEnd(i, clsAlnum)
	if e-i < 19 || e+3 >= len(s) || s[e] != '.' || s[e+1:e+3] != "ey" {
		return i, i
	}
	e2 := sc.runEnd(e+1, clsURL64)
	if e2-e-1 < 19 {
		return i, i
	}
	if e2 < len(s) && s[e2] == '.' {
		if e3 := sc.runEnd(e2+1, clsURL64); e3-e2-1 >= 10 {
			e2 = e3
			for k := 0; k < 2 && e2 < len(s) && s[e2] == '='; k++ {
				e2++
			}
		}
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
	if !hasBase64Run(s[body:min(len(s), body+256)], 20) {
		return i, i // "-----BEGIN PRIVATE KEY-----\n...": no key in it
	}
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

// hasBase64Run reports whether s holds n [A-Za-z0-9+/] bytes in a row.
func hasBase64Run(s string, n int) bool {
	k := 0
	for i := 0; i < len(s); i++ {
		if class[s[i]]&clsStd64 == 0 {
			k = 0
		} else if k++; k >= n {
			return true
		}
	}
	return false
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
		return sc.userPassword(i, a, e, q)
	}
	if e <= a || placeholderValue(s[a:e]) {
		return i, i
	}
	return a, sc.widen(a, e)
}

// userPassword finds the password in the argument of "-u"/"--user" that
// runs from a to e (q is its quote, 0 for none): after the first ':', and
// also in user:'password' and "user":"password" forms. When the password
// is empty ("-u APIKEY:", as Stripe's and many APIs' docs write it) the
// user name is the secret.
func (sc *scanner) userPassword(i, a, e int, q byte) (int, int) {
	s := sc.s
	if q != 0 && e+1 < len(s) && s[e] == q && s[e+1] == ':' {
		// "user":"password": the password follows the closing quote.
		p := e + 2
		pq := byte(0)
		if p < len(s) && (s[p] == '"' || s[p] == '\'') {
			pq = s[p]
			p++
		}
		pe := p
		for pe < len(s) && s[pe] != '\n' && (pq != 0 && s[pe] != pq || pq == 0 && s[pe] != ' ' && s[pe] != '\t') {
			pe++
		}
		if pe <= p || startsWithMarker(s[p:]) || placeholderValue(s[p:pe]) {
			return i, i
		}
		if sc.anyIn(a, e) {
			return a, sc.widen(a, pe) // a token as the user name: both go
		}
		return p, sc.widen(p, pe)
	}
	colon := strings.IndexByte(s[a:e], ':')
	if colon < 0 || startsWithMarker(s[a+colon+1:e]) || placeholderValue(s[a:e]) {
		return i, i
	}
	p := a + colon + 1
	if p == e && q == 0 && e+1 < len(s) && (s[e] == '\'' || s[e] == '"') {
		// user:'password'
		pq := s[e]
		if end := strings.IndexByte(s[e+1:], pq); end > 0 {
			p, e = e+1, e+1+end
		}
	}
	if p == e {
		if colon == 0 || placeholderValue(s[a:a+colon]) {
			return i, i
		}
		return a, sc.widen(a, a+colon) // "-u APIKEY:"
	}
	if placeholderValue(s[p:e]) {
		return i, i
	}
	// The scan resumes after the password, so a token used as the user
	// name ("-u ghp_…:x-oauth-basic") would never be seen: then both go.
	if sc.anyIn(a, a+colon) {
		return a, sc.widen(a, e)
	}
	return p, sc.widen(p, e)
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
	if e-a < 8 || startsWithMarker(s[a:]) || placeholderValue(s[a:e]) {
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
	if colon < 0 || a+colon+1 == at || isMarker(s[a+colon+1:at]) || isMarker(s[a:at]) || placeholderValue(s[a+colon+1:at]) {
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
		if triggered(s, j) {
			if x, y := sc.find(j); y > x {
				return true
			}
		}
	}
	return e-a == 40 && awsSecretShape(s[a:e])
}

// assignmentAt matches the value in "name = value", "name: value", the
// operators ":=", "::=", ":::=", "?=", "??=", ".=", "+=", "=>", typed
// declarations ("var name string = value", "name: String = value"),
// "\"name\": \"value\"" and the same with JSON-escaped quotes, when name is
// secret by sensitiveName. i is the index of the ':' or '='.
func (sc *scanner) assignmentAt(i int) (int, int) {
	s := sc.s
	sep := i + 1 // the first byte after the operator
	op := i      // the first byte of the operator
	switch s[i] {
	case '=':
		if i > 0 && strings.IndexByte(":=!<>", s[i-1]) >= 0 {
			return i, i // ":=" (handled at its ':'), "==", "!=", "<=", ">="
		}
		if sep < len(s) && s[sep] == '=' {
			return i, i // "=="
		}
		if sep < len(s) && s[sep] == '>' {
			sep++ // "=>"
		}
		for op > 0 && i-op < 2 && strings.IndexByte("?.+|", s[op-1]) >= 0 {
			op-- // ".=", "?=", "??=", "+=", "||="
		}
	case ':':
		k := sep
		for k < len(s) && k-i < 3 && s[k] == ':' {
			k++
		}
		if k < len(s) && s[k] == '=' {
			sep = k + 1 // ":=", "::=", ":::="
		} else if k > sep {
			return i, i // "::" is a scope ("std::string"), not an operator
		}
	}
	// The name: skip closing quotes, escapes and blanks, then take the
	// identifier; after a type ("apiToken string ="), the one before it.
	n, j := nameBefore(s, op-1)
	if n == j {
		return i, i
	}
	switch name := s[n+1 : j+1]; {
	case sensitiveName(name):
	case s[i] == ':' && sep == i+1:
		return sc.k8sDataAt(i, n+1)
	case s[i] == '=' && strings.EqualFold(name, "value") && sensitiveAttrBefore(s, n):
	default:
		if s[i] != '=' || !typeWord(name) {
			return i, i
		}
		k := n
		for k >= 0 && n-k < 4 && (s[k] == ' ' || s[k] == '\t' || s[k] == ':') {
			k--
		}
		if k == n {
			return i, i
		}
		if n, j = nameBefore(s, k); n == j || !sensitiveName(s[n+1:j+1]) {
			return i, i
		}
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
	if s[i] == ':' && sep == i+1 {
		a = skipTypeAnnotation(s, a)
	}
	// "Authorization: Bearer x": redact the credential, not the scheme.
	a = schemeEnd(s, a)
	if a >= len(s) {
		return i, i
	}
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
		if q == '`' && strings.IndexByte(s[a:e], ' ') >= 0 {
			return i, i // a shell `command`, not a value
		}
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
	case v == "null", v == "true", v == "false", v == "None", v == "nil", placeholderValue(v):
		return i, i
	case v[len(v)-1] == ':' && sensitiveName(v[:len(v)-1]):
		return i, i // code: `token = "token: …"`, the name of another value
	case len(v) < minKeyValue && !passwordName(s[n+1:j+1]):
		return i, i // too short for a key or token ("SUMO_ACCESS_KEY: AbCeFG123")
	}
	return a, sc.widen(a, e)
}

// minKeyValue is the shortest value taken for a key or token by its name
// alone; passwords can be shorter.
const minKeyValue = 10

// passwordName reports whether a secret name names a password (or a pass
// phrase, a PIN), whose value may be short.
func passwordName(name string) bool {
	return containsFold(name, "pass") || containsFold(name, "pwd") || containsFold(name, "secret")
}

// nameBefore returns the identifier ending at or before s[j], after
// skipping up to four closing quotes, escapes and blanks: it is
// s[n+1:j+1], empty when n == j.
func nameBefore(s string, j int) (n, end int) {
	for k := 0; k < 4 && j >= 0 && (s[j] == '"' || s[j] == '\'' || s[j] == '`' || s[j] == '\\' || s[j] == ' ' || s[j] == '\t'); k++ {
		j--
	}
	for k := 0; k < 60 && j >= 0 && (s[j] == ' ' || s[j] == '\t'); k++ {
		j-- // aligned columns: "password       = …"
	}
	n = j
	for stop := max(j-64, -1); n > stop && nameBytes[s[n]]; {
		n--
	}
	return n, j
}

// nameBytes holds nameByte for every byte.
var nameBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = nameByte(byte(c))
	}
	return t
}()

// skipTypeAnnotation returns where the value starts in "name: Type =
// value" (Kotlin, TypeScript, Python), given a at "Type"; else a.
func skipTypeAnnotation(s string, a int) int {
	w := a
	for w < len(s) && (isAlnum(s[w]) || s[w] == '_') {
		w++
	}
	if w == a || !typeWord(s[a:w]) {
		return a
	}
	for w < len(s) && (s[w] == ' ' || s[w] == '\t') {
		w++
	}
	if w >= len(s) || s[w] != '=' || w+1 < len(s) && s[w+1] == '=' {
		return a
	}
	w++
	for w < len(s) && (s[w] == ' ' || s[w] == '\t') {
		w++
	}
	return w
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
	if w >= len(s) || s[w] == '\n' || s[w] == '\r' || s[w] == '"' || s[w] == '\'' || s[w] == '\\' {
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
		if !triggered(s, j) {
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
