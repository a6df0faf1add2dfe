package sanitize

import "strings"

// Context rules find a secret by what is around it: a URL's user
// information, a value after a secret-looking name (see assignmentAt), an
// argument after a secret-looking first argument, an XML element.

// bareUserinfoAt matches the password of "user:password@host" without a
// scheme ("//user:password@host", "dsn=user:password@db:5432"). i is the
// index of the ':' between user and password. The user must start a word
// (after a blank, a quote, a bracket, '=', ',', ';' or "//"), the password
// must run, without blanks or '/', to an '@', and the host after it must
// look like one (a dot, a port, or "localhost"), so that prose such as
// "Note:see@item" stays.
func (sc *scanner) bareUserinfoAt(i int) (int, int) {
	s := sc.s
	// Checked first: most ':' are followed by a blank, a quote or a
	// digit run that ends without an '@'. Where the run of password bytes
	// after i ends is kept, so that the ':' inside it ("a:a:a:…") do not
	// measure it again.
	if i >= sc.passEnd {
		e := i + 1
		for e < len(s) && s[e] != '@' && passByte(s[e]) {
			e++
		}
		sc.passEnd = e
	}
	e := sc.passEnd
	if e == i+1 || e-i > 257 || e >= len(s) || s[e] != '@' {
		return i, i
	}
	u := i
	for u > 0 && i-u < 128 && userByte(s[u-1]) {
		u--
	}
	if u > 0 && strings.IndexByte(" \t\r\n\"'`([{<=,;/|>", s[u-1]) < 0 {
		return i, i
	}
	slashes := u >= 2 && s[u-2:u] == "//"
	if u == i && !slashes {
		return i, i // ":pass@host" only after "//"
	}
	for _, scheme := range [...]string{"mailto", "tel", "sip", "sips", "xmpp", "urn", "data", "news", "javascript"} {
		if strings.EqualFold(s[u:i], scheme) {
			return i, i
		}
	}
	a := i + 1
	if !hostAfter(s, e+1) {
		return i, i
	}
	if startsWithMarker(s[a:]) || isMarker(s[u:e]) || placeholderValue(s[a:e]) {
		return i, i
	}
	return a, sc.widen(a, e)
}

// userByte: a byte of a URL user name as people write them.
func userByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '-' || c == '%' || c == '+' || c == '~'
}

// passByte: a byte that can be part of a password in user information.
func passByte(c byte) bool { return passBytes[c] }

var passBytes = func() (t [256]bool) {
	for c := '!'; c < 0x7f; c++ {
		t[c] = strings.IndexByte("/?#\"'`<>\\@", byte(c)) < 0
	}
	return t
}()

// hostAfter reports whether s[h:] starts with a host name that has a dot
// or a port, or is "localhost", or an IPv6 literal.
func hostAfter(s string, h int) bool {
	if h >= len(s) {
		return false
	}
	if s[h] == '[' {
		return true
	}
	e := h
	dot := false
	for e < len(s) && (isAlnum(s[e]) || s[e] == '-' || s[e] == '.' || s[e] == '_') {
		if s[e] == '.' && e+1 < len(s) && isAlnum(s[e+1]) {
			dot = true
		}
		e++
	}
	if e == h {
		return false
	}
	port := e+1 < len(s) && s[e] == ':' && s[e+1] >= '0' && s[e+1] <= '9'
	return dot || port || strings.EqualFold(s[h:e], "localhost")
}

// argPairAt matches the second argument of `("NAME", "value")` when NAME
// is secret by sensitiveName: System.setProperty, os.environ.get with a
// default, map.put, config.set. i is the index of the quote that closes
// NAME, followed by ','.
func (sc *scanner) argPairAt(i int) (int, int) {
	s := sc.s
	q := s[i]
	o := i - 1
	for o >= 0 && i-o <= 64 && nameByte(s[o]) {
		o--
	}
	if o < 0 || s[o] != q || o == i-1 || !sensitiveName(s[o+1:i]) {
		return i, i
	}
	a := i + 2
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	if a >= len(s) || (s[a] != '"' && s[a] != '\'') {
		return i, i
	}
	q = s[a]
	a++
	e := a
	for e < len(s) && s[e] != q && s[e] != '\n' {
		if s[e] == '\\' {
			e++
		}
		e++
	}
	e = min(e, len(s))
	if e <= a || startsWithMarker(s[a:]) || placeholderValue(s[a:e]) {
		return i, i
	}
	return a, sc.widen(a, e)
}

func nameByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

// xmlAt matches the text of <name>text</name> (attributes allowed) when
// name is secret by sensitiveName: Maven's <password>, .NET's
// <ClientSecret>. The text is trimmed of blanks and line ends; an element
// holding other elements is left to the scan of its children. i is the
// index of the '<'.
func (sc *scanner) xmlAt(i int) (int, int) {
	s := sc.s
	ne := i + 1
	for ne < len(s) && ne-i <= 64 && (nameByte(s[ne]) || s[ne] == ':') {
		ne++
	}
	if ne >= len(s) || !sensitiveName(s[i+1:ne]) {
		return i, i
	}
	gt := ne
	if s[gt] != '>' {
		if s[gt] != ' ' && s[gt] != '\t' && s[gt] != '\n' {
			return i, i
		}
		for gt < len(s) && gt-ne < 256 && s[gt] != '>' && s[gt] != '<' {
			gt++
		}
		if gt >= len(s) || s[gt] != '>' || s[gt-1] == '/' {
			return i, i
		}
	}
	a := gt + 1
	lt := strings.IndexByte(s[a:min(len(s), a+4096)], '<')
	if lt < 0 {
		return i, i
	}
	e := a + lt
	if e+1 >= len(s) || s[e+1] != '/' {
		return i, i
	}
	for a < e && isBlank(s[a]) {
		a++
	}
	for e > a && isBlank(s[e-1]) {
		e--
	}
	if e <= a || startsWithMarker(s[a:]) || placeholderValue(s[a:e]) {
		return i, i
	}
	return a, sc.widen(a, e)
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// placeholderValue reports whether a value found by context is obviously
// not a secret: a reference to one ("$VAR", "${…}", "$(cmd)", "{{ … }}",
// "%s", "var.db_password", "os.environ.get(…)"), a placeholder
// ("<your token>", "[PASSWORD]", "xxxx", "****", "...", "YOUR_API_KEY",
// "changeme"), a SOPS-encrypted value ("ENC[AES256_GCM,…") or a single
// character. Context rules skip such values, so
// that configuration templates and documentation stay readable; shapes
// are matched whatever their context.
func placeholderValue(v string) bool {
	if len(v) < 2 || placeholder(v) {
		return true
	}
	switch v[0] {
	case '$':
		return v[1] == '{' || v[1] == '(' || isWordByte(v[1])
	case '<':
		return strings.IndexByte(v, '>') > 0 || strings.IndexByte(v, ' ') > 0
	case '[':
		return v[len(v)-1] == ']'
	case '%':
		return v[1] == 's' || v[1] == '(' || v[1] == '{' || v[len(v)-1] == '%' // printf, %ENV%
	}
	if strings.HasPrefix(v, "{{") || strings.HasPrefix(v, "#{") || strings.HasPrefix(v, "<%") || strings.HasPrefix(v, "ENC[") {
		return true // templates, SOPS-encrypted values
	}
	// Elisions, redactions and AWS's documented examples
	// (AKIAIOSFODNN7EXAMPLE) show near the start; looking no further keeps
	// text glued after a real value from hiding it.
	if head := v[:min(len(v), 16)]; strings.Contains(head, "...") || containsFold(v[:min(len(v), 32)], "redacted") ||
		strings.Contains(v[:min(len(v), 20)], "EXAMPLE") {
		return true
	}
	if strings.Contains(v, " = ") {
		return true // code: `token = "name = …"`
	}
	if masked(v) || artifactVersion(v) {
		return true
	}
	if len(v) <= 16 {
		var buf [16]byte
		switch string(lower(buf[:0], v)) {
		case "password", "passwd", "pass", "secret", "token", "test", "changeme", "change_me",
			"example", "placeholder", "dummy", "fake", "sample", "none", "null", "nil",
			"undefined", "empty", "string", "value", "foo", "bar", "new", "mypassword", "yourpassword",
			"your_password", "your_token", "your_api_key", "api_key", "api-key", "apikey":
			return true
		}
	}
	return constantName(v) || codeRef(v)
}

// masked reports whether a value is mostly mask ('x', 'X', '*', '#': at
// least half of its bytes besides separators) or ends in a run of eight
// or more of one mask byte ("xoxp-5723…-####…", "sk-abc…********"): a
// secret shown masked, or a template of one.
func masked(v string) bool {
	n, m, run := 0, 0, 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '-', '_', '.', '~', ':', '/':
			run = 0
			continue
		}
		n++
		if c == 'x' || c == 'X' || c == '*' || c == '#' {
			m++
			if i > 0 && c == v[i-1] {
				run++
			} else {
				run = 1
			}
		} else {
			run = 0
		}
	}
	return n > 0 && 2*m >= n || run >= 8
}

// artifactVersion reports whether v names a package at a version, a
// name of lower-case words and a dotted version after its last '-'
// ("jjwt-jackson-0.11.2", Maven's group:artifact:version).
func artifactVersion(v string) bool {
	d := strings.LastIndexByte(v, '-')
	if d <= 0 {
		return false
	}
	for i := 0; i < d; i++ {
		if c := v[i]; !isLower(c) && c != '-' && (c < '0' || c > '9') {
			return false
		}
	}
	dots, digits := 0, 0
	for i := d + 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '.':
			if digits == 0 {
				return false
			}
			dots, digits = dots+1, 0
		case c >= '0' && c <= '9':
			digits++
			if digits > 4 {
				return false
			}
		default:
			return false
		}
	}
	return dots >= 1 && digits > 0 && isLower(v[0])
}

// constantName: upper-case words joined by '_' or '-' ("ACCESS_TOKEN",
// "YOUR-API-KEY"), the name of a value rather than the value.
func constantName(v string) bool {
	sep := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case isUpper(c):
		case c == '_' || c == '-':
			sep = true
		default:
			return false
		}
	}
	return sep
}

// codeRefRoots start expressions that read a value from somewhere else.
var codeRefRoots = map[string]bool{
	"var": true, "local": true, "data": true, "module": true, "self": true, "this": true,
	"os": true, "process": true, "env": true, "config": true, "cfg": true, "settings": true,
	"secrets": true, "vars": true, "params": true, "props": true, "values": true, "Values": true,
	"options": true, "opts": true, "args": true, "ctx": true, "context": true, "request": true,
	"req": true, "inputs": true, "steps": true, "needs": true, "matrix": true, "github": true,
}

// codeRef reports whether v reads a value from somewhere else: a dotted
// expression, or a call, from a root such as var., env., process., os.
// ("var.db_password", "process.env.TOKEN", "os.getenv(…)"). The root is
// what decides, so that text glued after a real value cannot make it one.
func codeRef(v string) bool {
	parts := 0
	first := ""
	start := 0
	for i := 0; i <= len(v); i++ {
		if i < len(v) && v[i] != '.' && v[i] != '(' && v[i] != '[' {
			continue
		}
		part := v[start:i]
		if part == "" || !(isLower(part[0]) || isUpper(part[0]) || part[0] == '_') {
			return false
		}
		for j := 0; j < len(part); j++ {
			if !isWordByte(part[j]) {
				return false
			}
		}
		if parts == 0 {
			first = part
		}
		parts++
		if i < len(v) && (v[i] == '(' || v[i] == '[') {
			return parts >= 2 && codeRefRoots[first]
		}
		start = i + 1
	}
	return parts >= 2 && codeRefRoots[first]
}

func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// typeWord reports whether w is a type written between a variable and its
// value ("var apiToken string = …", "token: String = …").
func typeWord(w string) bool {
	switch w {
	case "string", "String", "str", "bytes", "CharSequence", "SecureString", "SecretStr", "Text", "text":
		return true
	}
	return false
}

// telegramAt matches a Telegram bot token, "<bot id>:A<34 bytes>", 5 to 16
// digits before the ':' at i.
func (sc *scanner) telegramAt(i int) (int, int) {
	s := sc.s
	d := i
	for d > 0 && i-d <= 16 && s[d-1] >= '0' && s[d-1] <= '9' {
		d--
	}
	if n := i - d; n < 5 || n > 16 || d < sc.from || !sc.boundaryBefore(d) || i+2 >= len(s) || s[i+1] != 'A' {
		return i, i
	}
	e := sc.runEnd(i+2, clsURL64)
	if e-i-2 != 34 || placeholder(s[i+2:e]) || entropy(s[d:e]) < 3 {
		return i, i
	}
	return d, e
}

// facebookAppToken matches a Facebook app access token, "<15 or 16
// digit app id>|<27 to 40 bytes>"; i is the index of the '|'.
func (sc *scanner) facebookAppToken(i int) (int, int) {
	s := sc.s
	d := i
	for d > 0 && i-d <= 16 && s[d-1] >= '0' && s[d-1] <= '9' {
		d--
	}
	if n := i - d; n < 15 || n > 16 || d < sc.from || !sc.boundaryBefore(d) {
		return i, i
	}
	e := sc.runEnd(i+1, clsURL64)
	if n := e - i - 1; n < 27 || n > 40 || !tokenEnd(s, e) || placeholder(s[i+1:e]) || entropy(s[d:e]) < 3 {
		return i, i
	}
	return d, e
}

// k8sDataAt matches the value of "name: <base64>" in the data (or
// stringData) block of a Kubernetes Secret manifest, whatever the name:
// every value there is secret. i is the index of the ':', nameAt that of
// the name, which must be indented under a "data:" line. Only text that
// holds a "kind: Secret" line at all is looked at.
func (sc *scanner) k8sDataAt(i, nameAt int) (int, int) {
	s := sc.s
	if nameAt == 0 || s[nameAt-1] != ' ' && s[nameAt-1] != '\t' {
		return i, i // checked first: the name must be indented
	}
	a := i + 1
	for a < len(s) && (s[a] == ' ' || s[a] == '\t') {
		a++
	}
	q := byte(0)
	if a < len(s) && (s[a] == '"' || s[a] == '\'') {
		q = s[a]
		a++
	}
	// Most values after a name are short words: turned away by their
	// first bytes before their run is measured.
	for k := a; k < a+10; k++ {
		if k >= len(s) || class[s[k]]&clsStd64 == 0 {
			return i, i
		}
	}
	e := sc.runEnd(a, clsStd64)
	for k := 0; k < 3 && e < len(s) && s[e] == '='; k++ {
		e++
	}
	end := e
	if q != 0 {
		if end >= len(s) || s[end] != q {
			return i, i
		}
		end++
	}
	if end < len(s) && s[end] != '\n' && s[end] != '\r' && s[end] != ' ' && s[end] != '\t' {
		return i, i
	}
	if !underDataBlock(s, nameAt) || !sc.kubernetesSecret(i) || placeholderValue(s[a:e]) {
		return i, i
	}
	return a, e
}

// kubernetesSecret reports whether the YAML document (between "---"
// lines) around position p has a "kind: Secret" line (any case, quotes
// allowed). The answer for the last document looked at is kept, so a scan
// reads each document once.
func (sc *scanner) kubernetesSecret(p int) bool {
	s := sc.s
	if p >= sc.k8sFrom && p < sc.k8sTo {
		return sc.k8s
	}
	from := strings.LastIndex(s[:p], "\n---") + 1
	to := len(s)
	if k := strings.Index(s[p:], "\n---"); k >= 0 {
		to = p + k
	}
	sc.k8sFrom, sc.k8sTo, sc.k8s = from, to, false
	doc := s[from:to]
	for q := 0; q < len(doc); {
		k := indexFold(doc[q:], "kind:")
		if k < 0 {
			break
		}
		v := q + k + len("kind:")
		for v < len(doc) && (doc[v] == ' ' || doc[v] == '\t' || doc[v] == '"' || doc[v] == '\'') {
			v++
		}
		if len(doc)-v >= 6 && strings.EqualFold(doc[v:v+6], "secret") && (v+6 == len(doc) || !isWordByte(doc[v+6])) {
			sc.k8s = true
			break
		}
		q = v
	}
	return sc.k8s
}

// indexFold is strings.Index for an ASCII lower-case needle, ignoring the
// case of s.
func indexFold(s, needle string) int {
	for i := 0; i+len(needle) <= len(s); i++ {
		if s[i]|0x20 == needle[0] && strings.EqualFold(s[i:i+len(needle)], needle) {
			return i
		}
	}
	return -1
}

// underDataBlock reports whether the line of nameAt is indented under a
// "data:" or "stringData:" line (looking back at most 1 KiB).
func underDataBlock(s string, nameAt int) bool {
	ls := strings.LastIndexByte(s[:nameAt], '\n') + 1
	indent := nameAt - ls
	if indent == 0 || strings.TrimLeft(s[ls:nameAt], " \t") != "" {
		return false
	}
	for end := ls - 1; end > 0 && nameAt-end < 1024; {
		start := strings.LastIndexByte(s[:end], '\n') + 1
		line := s[start:end]
		body := strings.TrimLeft(line, " \t")
		if body != "" && len(line)-len(body) < indent {
			body = strings.TrimRight(body, " \t\r")
			return body == "data:" || body == "stringData:"
		}
		end = start - 1
	}
	return false
}

// sensitiveAttrBefore reports whether the value="…" attribute whose name
// starts at s[n+1] follows key="NAME" or name="NAME" with NAME secret
// (NuGet's <add key="ClearTextPassword" value="…"/>, <param name=…>).
func sensitiveAttrBefore(s string, n int) bool {
	j := n
	for j >= 0 && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n') && n-j < 16 {
		j--
	}
	if j < 1 || (s[j] != '"' && s[j] != '\'') {
		return false
	}
	q := s[j]
	o := j - 1
	for o >= 0 && j-o <= 64 && s[o] != q {
		o--
	}
	if o < 1 || s[o-1] != '=' || !sensitiveName(s[o+1:j]) {
		return false
	}
	k := o - 2
	w := k
	for w >= 0 && isAlnum(s[w]) {
		w--
	}
	attr := s[w+1 : k+1]
	return strings.EqualFold(attr, "key") || strings.EqualFold(attr, "name")
}
