package sanitize

import (
	"math"
	"strings"
)

// A shape is a secret recognised by its text alone: a fixed prefix (or a
// mark inside it) followed by runs of one byte class each, with lengths
// and literal separators. These are the providers' documented token
// formats, as gitleaks v8.30.1 describes them, plus Harness's own.
// Matching is a prefix comparison and cached class runs (scanner.run), so
// a shape costs nothing where its first two bytes do not occur.
type shape struct {
	prefix string
	fold   bool // prefix in any case
	// bound: the byte before the prefix must not be a word byte
	// [A-Za-z0-9_], so that "task_test_…" or "&hf_serving…" inside an
	// identifier is not a token. Inside a span already being redacted
	// (widen) the boundary is not needed.
	bound bool
	segs  []seg
	// entropy is the least Shannon entropy, in bits per byte, of the
	// whole match (as gitleaks measures it), 0 for none.
	entropy float64
	// check, when set, is a further condition on the text after the
	// prefix.
	check func(body string) bool
	// custom replaces prefix and segs: the rule's own matcher, triggered
	// at the first bytes of each of trigs. (A kind, not a func value, so
	// that the scanner stays on the stack.)
	custom customKind
	trigs  []string
	// endBound: the byte after the match must end a token (a blank, a
	// quote, ';', ',', a closing bracket or the end), as for gitleaks'
	// rules that would otherwise fire on "GLC_CreateLightmap…(void)".
	endBound bool
	minLen   int // the shortest match: the prefix, the segments' minimums and literals
	// anyBody: recognised whatever the body (no placeholder or entropy
	// test): Harness's own secrets, and age keys, whose bech32 body can be
	// one repeated letter.
	anyBody bool
}

// seg is a run of class cls, of min to max bytes (max 0: no limit),
// followed by the literal lit when it is not empty. pad allows up to
// three '=' after the run (base64 padding). A lit marked opt may be
// missing: the match then ends after the run, and if what follows the
// literal does not fit, the match ends before the literal.
type seg struct {
	cls      uint16
	min, max int
	lit      string
	opt      bool
	pad      bool
}

// customKind names a shape with its own matcher.
type customKind uint8

const (
	noCustom customKind = iota
	onePassword
	azure
	terraform
	authress
	maxmind
)

func (r *shape) register(k int) {
	r.minLen = len(r.prefix)
	for _, g := range r.segs {
		r.minLen += max(g.min, 1)
		if g.opt {
			break // what follows an optional literal may be missing
		}
		r.minLen += len(g.lit)
	}
	if r.custom != noCustom {
		for _, t := range r.trigs {
			trigPrefix(t, false, r.bound, k)
		}
		return
	}
	trigPrefix(r.prefix, r.fold, r.bound, k)
}

// boundaryBefore reports whether s[i] starts a word, or the boundary does
// not matter because a span around i is already being redacted.
func (sc *scanner) boundaryBefore(i int) bool {
	return i == 0 || sc.depth > 0 || !isWordByte(sc.s[i-1])
}

// match returns the span of r at s[i], or an empty one.
func (r *shape) match(sc *scanner, i int) (int, int) {
	switch r.custom {
	case onePassword:
		return sc.onePasswordSecretKey(i)
	case azure:
		return sc.azureClientSecret(i)
	case terraform:
		return sc.terraformCloudToken(i)
	case authress:
		return sc.authressKey(i)
	case maxmind:
		return sc.maxmindKey(i)
	}
	s := sc.s
	if len(s)-i < len(r.prefix) {
		return i, i
	}
	if r.fold {
		if !strings.EqualFold(s[i:i+len(r.prefix)], r.prefix) {
			return i, i
		}
	} else if s[i:i+len(r.prefix)] != r.prefix {
		return i, i
	}
	if r.bound && !sc.boundaryBefore(i) {
		return i, i
	}
	pos := i + len(r.prefix)
	end, ok := sc.segs(pos, r.segs)
	if !ok || r.endBound && !tokenEnd(s, end) {
		return i, i
	}
	if !r.anyBody {
		// Entropy over the shortest match the shape allows (the whole of
		// a fixed-length one), so that text glued after a token cannot
		// bring it under the threshold.
		if placeholder(s[pos:end]) || r.entropy > 0 && entropy(s[i:min(end, i+r.minLen)]) < r.entropy {
			return i, i
		}
	}
	if r.check != nil && !r.check(s[pos:end]) {
		return i, i
	}
	return i, end
}

// segs matches segments from pos and returns the end of the match.
func (sc *scanner) segs(pos int, segs []seg) (int, bool) {
	s := sc.s
	good := -1 // where the match may end, once an optional literal is seen
	for _, g := range segs {
		e := sc.runEnd(pos, g.cls)
		if n := e - pos; n < g.min || g.max > 0 && n > g.max {
			if good >= 0 {
				return good, true
			}
			return 0, false
		}
		pos = e
		if g.pad {
			for k := 0; k < 3 && pos < len(s) && s[pos] == '='; k++ {
				pos++
			}
		}
		if g.lit == "" {
			continue
		}
		if strings.HasPrefix(s[pos:], g.lit) {
			if g.opt && good < 0 {
				good = pos
			}
			pos += len(g.lit)
			continue
		}
		if g.opt {
			return pos, true
		}
		if good >= 0 {
			return good, true
		}
		return 0, false
	}
	return pos, true
}

// tokenEnd reports whether s[e] ends a token.
func tokenEnd(s string, e int) bool {
	return e == len(s) || strings.IndexByte("`'\"; \t\r\n\\,)]}>&|", s[e]) >= 0
}

// entropy is the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if len(s) == 0 {
		return 0
	}
	var counts [256]int32
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		if c != 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// placeholder reports whether a token body is obviously not a real one:
// made only of filler ("xxxx", "XXXX-XXXX", "****", "0000") or of one
// repeated character besides separators, or starting (within its first 8
// bytes) a run of eight filler bytes ("fo1_xxxxxxxx…"), twelve of any one
// byte but 'A' (Twitter's bearer tokens start with 22 of them) or six
// ascending lower-case letters ("abcdefghij…"; digits and capitals are
// left alone, as gitleaks' own examples write "12345678-ABCD-…"). Looking only near
// the start keeps text glued after a real token from hiding it. An empty
// body is not a placeholder.
func placeholder(b string) bool {
	var first byte
	filler, same := true, true
	run, asc := 0, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if i > 0 && c == b[i-1] {
			run++
		} else {
			run = 1
		}
		if i > 0 && c == b[i-1]+1 && isLower(c) && isLower(b[i-1]) {
			asc++
		} else {
			asc = 1
		}
		if i-asc < 8 && asc >= 6 || i-run < 8 && (run >= 12 && c != 'A' || run >= 8 && strings.IndexByte("xX*#0.", c) >= 0) {
			return true
		}
		switch c {
		case '-', '_', '.', '=':
			continue
		}
		if first == 0 {
			first = c
		} else if c != first {
			same = false
		}
		if strings.IndexByte("xX*#0", c) < 0 {
			filler = false
		}
	}
	return first != 0 && (filler || same)
}

// Body checks of some shapes.
func allDigits(b string) bool {
	for i := 0; i < len(b); i++ {
		if b[i] < '0' || b[i] > '9' {
			return false
		}
	}
	return len(b) > 0
}

// shapes are the recognised token formats. Lengths follow the providers'
// formats; a run longer than max is another string, not this token.
var shapes = []shape{
	// Harness's own: confirmation tokens (trusted.NewToken: "htk_" and 43
	// base64url bytes), the API key `harness serve --demo` mints ("demo_"
	// and 32 base64url bytes) and harness-load's ("load_" and 48 hex).
	{prefix: "htk_", segs: []seg{{cls: clsURL64, min: 43}}, anyBody: true},
	{prefix: "demo_", bound: true, segs: []seg{{cls: clsURL64, min: 32}}, anyBody: true, check: harnessDemoKey},
	{prefix: "load_", bound: true, segs: []seg{{cls: clsHex, min: 48}}, anyBody: true},

	// AWS
	{prefix: "ABSK", bound: true, segs: []seg{{cls: clsStd64, min: 109, max: 269, pad: true}}, entropy: 3}, // Bedrock, long-lived
	{prefix: "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t", segs: []seg{{cls: clsStd64, pad: true}}},      // Bedrock, short-lived
	// GitHub
	{prefix: "ghp_", segs: []seg{{cls: clsAlnum, min: 30}}},
	{prefix: "gho_", segs: []seg{{cls: clsAlnum, min: 30}}},
	{prefix: "ghu_", segs: []seg{{cls: clsAlnum, min: 30}}},
	{prefix: "ghs_", segs: []seg{{cls: clsAlnum, min: 30}}},
	{prefix: "ghr_", segs: []seg{{cls: clsAlnum, min: 30}}},
	{prefix: "github_pat_", segs: []seg{{cls: clsTokenWord, min: 22}}},
	// GitLab: personal, deploy, feed, runner, CI job, OAuth, SCIM, agent,
	// incoming mail, feature flag and pipeline trigger tokens, runner
	// registration tokens; routable ones end in ".xx" + 7.
	{prefix: "glpat-", segs: gitlabSegs, entropy: 3},
	{prefix: "gldt-", segs: gitlabSegs, entropy: 3},
	{prefix: "glft-", segs: gitlabSegs, entropy: 3},
	{prefix: "glrt-", segs: gitlabSegs, entropy: 3},
	{prefix: "glcbt-", segs: gitlabSegs, entropy: 3},
	{prefix: "gloas-", segs: gitlabSegs, entropy: 3},
	{prefix: "glsoat-", segs: gitlabSegs, entropy: 3},
	{prefix: "glagent-", segs: gitlabSegs, entropy: 3},
	{prefix: "glimt-", segs: gitlabSegs, entropy: 3},
	{prefix: "glffct-", segs: gitlabSegs, entropy: 3},
	{prefix: "glptt-", segs: []seg{{cls: clsHex, min: 40, max: 40}}, entropy: 3},
	{prefix: "GR1348941", segs: []seg{{cls: clsURL64, min: 20}}, entropy: 3},
	{prefix: "_gitlab_session=", segs: []seg{{cls: clsLowerDigit, min: 32, max: 32}}},
	// OpenAI and Anthropic keys start "sk-": see matchRules.
	// Stripe
	{prefix: "sk_live_", bound: true, segs: stripeSegs, entropy: 2},
	{prefix: "sk_test_", bound: true, segs: stripeSegs, entropy: 2},
	{prefix: "sk_prod_", bound: true, segs: stripeSegs, entropy: 2},
	{prefix: "rk_live_", bound: true, segs: stripeSegs, entropy: 2},
	{prefix: "rk_test_", bound: true, segs: stripeSegs, entropy: 2},
	{prefix: "rk_prod_", bound: true, segs: stripeSegs, entropy: 2},
	{prefix: "whsec_", segs: []seg{{cls: clsStd64, min: 24}}},
	// Google
	{prefix: "AIza", bound: true, segs: []seg{{cls: clsURL64, min: 35, max: 35}}},
	{prefix: "ya29.", segs: []seg{{cls: clsURL64, min: 20}}},
	{prefix: "GOCSPX-", segs: []seg{{cls: clsURL64, min: 20}}},
	// Package registries and developer platforms
	{prefix: "npm_", segs: []seg{{cls: clsAlnum, min: 36}}},
	{prefix: "pypi-AgEIcHlwaS5vcmc", segs: []seg{{cls: clsURL64, min: 40}}},
	{prefix: "sqp_", bound: true, segs: []seg{{cls: clsHex, min: 40, max: 40}}, entropy: 3}, // SonarQube
	{prefix: "squ_", bound: true, segs: []seg{{cls: clsHex, min: 40, max: 40}}, entropy: 3},
	{prefix: "sqa_", bound: true, segs: []seg{{cls: clsHex, min: 40, max: 40}}, entropy: 3},
	{prefix: "rubygems_", bound: true, segs: []seg{{cls: clsHex, min: 48, max: 48}}},
	{prefix: "CLOJARS_", fold: true, segs: []seg{{cls: clsAlnum, min: 60, max: 60}}, entropy: 2},
	{prefix: "hf_", bound: true, segs: []seg{{cls: clsAlnum, min: 34, max: 34}}},
	{prefix: "api_org_", bound: true, segs: []seg{{cls: clsAlnum, min: 34, max: 34}}},
	{prefix: "pul-", bound: true, segs: []seg{{cls: clsHex, min: 40, max: 40}}},
	{prefix: "lin_api_", segs: []seg{{cls: clsAlnum, min: 40, max: 40}}, entropy: 2},
	{prefix: "lin_oauth_", segs: []seg{{cls: clsAlnum, min: 40, max: 40}}, entropy: 2},
	{prefix: "ntn_", bound: true, segs: []seg{{cls: clsAlnum, min: 46, max: 46}}, entropy: 4, check: notionBody},
	{prefix: "PMAK-", bound: true, segs: []seg{{cls: clsHexAny, min: 24, max: 24, lit: "-"}, {cls: clsHexAny, min: 34, max: 34}}, entropy: 3},
	{prefix: "pnu_", bound: true, segs: []seg{{cls: clsAlnum, min: 36, max: 36}}, entropy: 2},
	{prefix: "rdme_", bound: true, segs: []seg{{cls: clsLowerDigit, min: 70, max: 70}}, entropy: 2},
	{prefix: "dp.pt.", bound: true, segs: dopplerSegs, entropy: 2},
	{prefix: "dp.st.", bound: true, segs: dopplerSegs, entropy: 2},
	{prefix: "dp.sa.", bound: true, segs: dopplerSegs, entropy: 2},
	{prefix: "dp.ct.", bound: true, segs: dopplerSegs, entropy: 2},
	{prefix: "dp.scim.", bound: true, segs: dopplerSegs, entropy: 2},
	{prefix: "dp.audit.", bound: true, segs: dopplerSegs, entropy: 2},
	{prefix: "ico-", bound: true, endBound: true, segs: []seg{{cls: clsAlnum, min: 32, max: 32}}, entropy: 3},
	{prefix: "sntryu_", bound: true, segs: []seg{{cls: clsHex, min: 64, max: 64}}, entropy: 3.5},
	{prefix: "sntrys_eyJ", bound: true, segs: []seg{{cls: clsStd64, min: 10, max: 400, pad: true, lit: "_"}, {cls: clsStd64, min: 43, max: 43}}, entropy: 4.5},
	{prefix: "pplx-", bound: true, segs: []seg{{cls: clsAlnum, min: 48, max: 48}}, entropy: 4},
	{prefix: "pscale_tkn_", segs: pscaleSegs, entropy: 3},
	{prefix: "pscale_oauth_", segs: pscaleSegs, entropy: 3},
	{prefix: "pscale_pw_", segs: pscaleSegs, entropy: 3},
	{prefix: "tk-us-", bound: true, segs: []seg{{cls: clsURL64, min: 48, max: 48}}, entropy: 2},
	{prefix: "sm_aat_", bound: true, segs: settlemintSegs, entropy: 3},
	{prefix: "sm_pat_", bound: true, segs: settlemintSegs, entropy: 3},
	{prefix: "sm_sat_", bound: true, segs: settlemintSegs, entropy: 3},
	{prefix: "sgp_local_", bound: true, endBound: true, segs: []seg{{cls: clsHexAny, min: 40, max: 40}}, entropy: 3}, // Sourcegraph
	{prefix: "sgp_", bound: true, endBound: true, segs: []seg{{cls: clsHexAny, min: 16, max: 16, lit: "_"}, {cls: clsHexAny, min: 40, max: 40}}, entropy: 3},
	{prefix: "sgp_", bound: true, endBound: true, segs: []seg{{cls: clsHexAny, min: 40, max: 40}}, entropy: 3},
	{prefix: "AKCp", bound: true, segs: []seg{{cls: clsAlnum, min: 69, max: 69}}, entropy: 4.5}, // Artifactory
	{prefix: "cmVmd", bound: true, segs: []seg{{cls: clsAlnum, min: 59, max: 59}}, entropy: 4.5},
	{prefix: "fio-u-", segs: []seg{{cls: clsURL64Eq, min: 64, max: 64}}},                                                         // Frame.io
	{prefix: "dt0c01.", segs: []seg{{cls: clsAlnum, min: 24, max: 24, lit: "."}, {cls: clsAlnum, min: 64, max: 64}}, entropy: 4}, // Dynatrace
	{prefix: "pat.", bound: true, segs: harnessIOSegs},                                                                           // Harness (harness.io)
	{prefix: "sat.", bound: true, segs: harnessIOSegs},
	{prefix: "pat", bound: true, segs: []seg{{cls: clsAlnum, min: 14, max: 14, lit: "."}, {cls: clsHex, min: 64, max: 64}}}, // Airtable
	// Cloud, identity and secret managers
	{prefix: "hvs.", bound: true, segs: []seg{{cls: clsURL64, min: 90, max: 120}}, entropy: 3.5}, // HashiCorp Vault
	{prefix: "hvb.", bound: true, segs: []seg{{cls: clsURL64, min: 138, max: 300}}, entropy: 4},
	{prefix: "s.", bound: true, segs: []seg{{cls: clsAlnum, min: 24, max: 24}}, entropy: 3.5, check: mixedClasses}, // Vault, before 1.10
	{prefix: "ops_eyJ", segs: []seg{{cls: clsStd64, min: 250, pad: true}}, entropy: 4},                             // 1Password service account
	{custom: onePassword, trigs: []string{"A3-"}, bound: true},
	{custom: azure, trigs: []string{"Q~"}},
	{custom: terraform, trigs: []string{"v1."}},
	{prefix: "v1.0-", bound: true, segs: []seg{{cls: clsHex, min: 24, max: 24, lit: "-"}, {cls: clsHex, min: 146, max: 146}}}, // Cloudflare origin CA
	{prefix: "LTAI", bound: true, segs: []seg{{cls: clsAlnum, min: 20, max: 20}}, entropy: 2},                                 // Alibaba
	{prefix: "4b1d", bound: true, segs: []seg{{cls: clsAlnum, min: 38, max: 38}}, entropy: 3},                                 // ClickHouse Cloud
	{prefix: "HRKU-AA", bound: true, segs: []seg{{cls: clsURL64, min: 58, max: 58}}, entropy: 4},                              // Heroku
	{prefix: "fo1_", bound: true, segs: []seg{{cls: clsURL64, min: 43, max: 43}}, entropy: 4},                                 // Fly.io
	{prefix: "fm1a_", bound: true, segs: flySegs, entropy: 4},
	{prefix: "fm1r_", bound: true, segs: flySegs, entropy: 4},
	{prefix: "fm2_", bound: true, segs: flySegs, entropy: 4},
	{prefix: "sha256~", bound: true, segs: []seg{{cls: clsURL64, min: 43, max: 43}}, entropy: 3.5}, // OpenShift
	{prefix: "API-", bound: true, segs: []seg{{cls: clsUpperDigit, min: 26, max: 26}}, entropy: 3}, // Octopus Deploy
	{prefix: "p8e-", bound: true, segs: []seg{{cls: clsAlnum, min: 32, max: 32}}, entropy: 2},      // Adobe
	{prefix: "ATATT3", bound: true, segs: []seg{{cls: clsURL64Eq, min: 186, max: 186}}, entropy: 3.5},
	{custom: authress, trigs: []string{"sc_", "ext_", "scauth_", "authress_"}, bound: true},
	{custom: maxmind, trigs: []string{"_mm"}},
	// Communication, payments, other SaaS
	{prefix: "SK", bound: true, segs: []seg{{cls: clsHexAny, min: 32, max: 32}}, entropy: 3}, // Twilio
	{prefix: "SG.", bound: true, segs: []seg{{cls: clsWordDotEq, min: 66, max: 66}}, entropy: 2},
	{prefix: "xkeysib-", bound: true, segs: []seg{{cls: clsHex, min: 64, max: 64, lit: "-"}, {cls: clsAlnum, min: 16, max: 16}}, entropy: 2},
	{prefix: "EAAA", bound: true, segs: squareSegs, entropy: 2}, // Square
	{prefix: "sq0atp-", bound: true, segs: squareSegs, entropy: 2},
	{prefix: "sq0csp-", bound: true, segs: squareSegs, entropy: 2},
	{prefix: "EAAM", bound: true, segs: facebookSegs, entropy: 4}, // Facebook page tokens
	{prefix: "EAAC", bound: true, segs: facebookSegs, entropy: 4},
	{prefix: "EZAK", bound: true, segs: []seg{{cls: clsAlnum, min: 54, max: 54}}, entropy: 2}, // EasyPost
	{prefix: "EZTK", bound: true, segs: []seg{{cls: clsAlnum, min: 54, max: 54}}, entropy: 2},
	{prefix: "shippo_live_", segs: []seg{{cls: clsHexAny, min: 40, max: 40}}, entropy: 2},
	{prefix: "shippo_test_", segs: []seg{{cls: clsHexAny, min: 40, max: 40}}, entropy: 2},
	{prefix: "duffel_test_", segs: []seg{{cls: clsURL64Eq, min: 43, max: 43}}, entropy: 2},
	{prefix: "duffel_live_", segs: []seg{{cls: clsURL64Eq, min: 43, max: 43}}, entropy: 2},
	{prefix: "FLWSECK_TEST-", segs: flutterwaveSegs, entropy: 2},
	{prefix: "FLWPUBK_TEST-", segs: flutterwaveSegs, entropy: 2},
	{prefix: "FLWSECK-", segs: flutterwaveSegs, entropy: 2},
	{prefix: "s-s4t2ud-", bound: true, segs: []seg{{cls: clsHexAny, min: 64, max: 64}}, entropy: 3}, // 42 intra
	{prefix: "s-s4t2af-", bound: true, segs: []seg{{cls: clsHexAny, min: 64, max: 64}}, entropy: 3},
	{prefix: "eyJrIjoi", fold: true, bound: true, segs: []seg{{cls: clsAlnum, min: 70, max: 400, pad: true}}, entropy: 3}, // Grafana API key
	{prefix: "glc_", fold: true, bound: true, endBound: true, segs: []seg{{cls: clsStd64, min: 32, max: 400, pad: true}}, entropy: 3},
	{prefix: "glsa_", fold: true, bound: true, segs: []seg{{cls: clsAlnum, min: 32, max: 32, lit: "_"}, {cls: clsHexAny, min: 8, max: 8}}, entropy: 3},
	{prefix: "shpat_", segs: shopifySegs},
	{prefix: "shpss_", segs: shopifySegs},
	{prefix: "shpca_", segs: shopifySegs},
	{prefix: "shppa_", segs: shopifySegs},
	{prefix: "dop_v1_", segs: digitalOceanSegs},
	{prefix: "doo_v1_", segs: digitalOceanSegs},
	{prefix: "dor_v1_", segs: digitalOceanSegs},
	{prefix: "dapi", bound: true, segs: []seg{{cls: clsHex, min: 32, max: 32, lit: "-", opt: true}, {cls: clsDigit, min: 1, max: 1}}}, // Databricks
	{prefix: "AGE-SECRET-KEY-1", segs: []seg{{cls: clsUpperDigit, min: 40}}, anyBody: true},
}

var (
	gitlabSegs       = []seg{{cls: clsURL64, min: 20, lit: ".", opt: true}, {cls: clsLowerDigit, min: 9, max: 9}}
	stripeSegs       = []seg{{cls: clsAlnum, min: 10, max: 99}}
	dopplerSegs      = []seg{{cls: clsAlnum, min: 40, max: 44}}
	pscaleSegs       = []seg{{cls: clsWordDotEq, min: 32, max: 64}}
	settlemintSegs   = []seg{{cls: clsAlnum, min: 16, max: 16}}
	harnessIOSegs    = []seg{{cls: clsURL64, min: 22, max: 22, lit: "."}, {cls: clsAlnum, min: 24, max: 24, lit: "."}, {cls: clsAlnum, min: 20, max: 20}}
	flySegs          = []seg{{cls: clsStd64, min: 100, pad: true}}
	squareSegs       = []seg{{cls: clsURL64, min: 22, max: 60}}
	facebookSegs     = []seg{{cls: clsAlnum, min: 100}}
	flutterwaveSegs  = []seg{{cls: clsAlnum, min: 12, max: 32, lit: "-X", opt: true}}
	shopifySegs      = []seg{{cls: clsHexAny, min: 32}}
	digitalOceanSegs = []seg{{cls: clsHex, min: 64}}
)

// harnessDemoKey: "demo_" and 32 base64url bytes exactly, or a longer run
// that is not a plain identifier ("demo_workspace_settings_for_tests").
func harnessDemoKey(b string) bool {
	return len(b) == 32 || classes(b) >= 2 && hasDigit(b)
}

// notionBody: 11 digits, then 35 letters and digits.
func notionBody(b string) bool { return allDigits(b[:11]) }

// mixedClasses: upper case, lower case and digits all present.
func mixedClasses(b string) bool { return classes(b) == 3 }

// onePasswordSecretKey matches a 1Password secret key, "A3-" and groups
// of upper-case letters and digits of 6, 11 (or 6-5), 5, 5 and 5 bytes.
func (sc *scanner) onePasswordSecretKey(i int) (int, int) {
	s := sc.s
	if !strings.HasPrefix(s[i:], "A3-") || !sc.boundaryBefore(i) {
		return i, i
	}
	var groups [7]int
	n := 0
	pos := i + 3
	for n < len(groups) {
		e := sc.runEnd(pos, clsUpperDigit)
		groups[n] = e - pos
		n++
		pos = e
		if pos+1 >= len(s) || s[pos] != '-' || class[s[pos+1]]&clsUpperDigit == 0 {
			break
		}
		pos++
	}
	g := groups[:n]
	ok := n == 5 && g[0] == 6 && g[1] == 11 && g[2] == 5 && g[3] == 5 && g[4] == 5 ||
		n == 6 && g[0] == 6 && g[1] == 6 && g[2] == 5 && g[3] == 5 && g[4] == 5 && g[5] == 5
	if !ok || entropy(s[i:pos]) < 3.8 {
		return i, i
	}
	return i, pos
}

// azureClientSecret matches an Entra ID (Azure AD) client secret: three
// bytes of [A-Za-z0-9_~.], a digit, "Q~", then 31 to 34 bytes of
// [A-Za-z0-9_~.-]. It is triggered at "Q~", four bytes into the secret.
func (sc *scanner) azureClientSecret(i int) (int, int) {
	s := sc.s
	a := i - 4
	if a < 0 || !strings.HasPrefix(s[i:], "Q~") || s[i-1] < '0' || s[i-1] > '9' {
		return i, i
	}
	for j := a; j < i-1; j++ {
		if class[s[j]]&clsAzure == 0 || s[j] == '-' {
			return i, i
		}
	}
	if a > 0 && sc.depth == 0 && strings.IndexByte("\\'\"`>=:(,) \t\r\n", s[a-1]) < 0 {
		return i, i
	}
	e := sc.runEnd(i+2, clsAzure)
	if n := e - i - 2; n < 31 || n > 34 || placeholder(s[i+2:e]) || entropy(s[a:e]) < 3 {
		return i, i
	}
	return a, e
}

// terraformCloudToken matches a Terraform Cloud / HCP Terraform API
// token: 14 letters and digits, ".atlasv1.", then 60 to 70 bytes of
// [A-Za-z0-9_=-]. It is triggered at "v1.", inside the secret.
func (sc *scanner) terraformCloudToken(i int) (int, int) {
	s := sc.s
	a := i - 20
	if a < 0 || !strings.HasPrefix(s[i:], "v1.") || s[i-6:i] != ".atlas" {
		return i, i
	}
	for j := a; j < i-6; j++ {
		if !isAlnum(s[j]) {
			return i, i
		}
	}
	if !sc.boundaryBefore(a) {
		return i, i
	}
	e := sc.runEnd(i+3, clsURL64Eq)
	if n := e - i - 3; n < 60 || n > 70 || entropy(s[a:e]) < 3.5 {
		return i, i
	}
	return a, e
}

// authressKey matches an Authress service client access key:
// "sc_"/"ext_"/"scauth_"/"authress_", then "id.kid.acc_account.secret".
func (sc *scanner) authressKey(i int) (int, int) {
	s := sc.s
	if !sc.boundaryBefore(i) {
		return i, i
	}
	var p int
	for _, pre := range [...]string{"sc_", "ext_", "scauth_", "authress_"} {
		if strings.HasPrefix(s[i:], pre) {
			p = i + len(pre)
			break
		}
	}
	if p == 0 {
		return i, i
	}
	e, ok := sc.segs(p, authressSegs)
	if !ok || e+1 >= len(s) || (s[e] != '_' && s[e] != '-') {
		return i, i
	}
	e2 := sc.runEnd(e+1, clsSlackWord)
	if n := e2 - e - 1; n < 10 || n > 32 || e2 >= len(s) || s[e2] != '.' {
		return i, i
	}
	e3 := e2 + 1
	for e3 < len(s) && e3-e2 <= 121 && (class[s[e3]]&clsB64Any != 0 || s[e3] == '=') {
		e3++
	}
	if n := e3 - e2 - 1; n < 30 || n > 120 || entropy(s[i:e3]) < 2 {
		return i, i
	}
	return i, e3
}

var authressSegs = []seg{{cls: clsAlnum, min: 5, max: 30, lit: "."}, {cls: clsAlnum, min: 4, max: 6, lit: ".acc"}}

// maxmindKey matches a MaxMind license key: 6 letters and digits, '_', 29
// letters and digits, "_mmk". It is triggered at "_mm", at its end.
func (sc *scanner) maxmindKey(i int) (int, int) {
	s := sc.s
	a := i - 36
	if a < 0 || !strings.HasPrefix(s[i:], "_mmk") || s[i-30] != '_' || !sc.boundaryBefore(a) {
		return i, i
	}
	for j := a; j < i; j++ {
		if j != i-30 && !isAlnum(s[j]) {
			return i, i
		}
	}
	e := i + 4
	if e < len(s) && isWordByte(s[e]) || entropy(s[a:e]) < 4 {
		return i, i
	}
	return a, e
}
