package bridge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/harness-runtime/harness/action"
)

// Render returns the readable text of an observation, as the bridge puts it
// beside the structured observation in a tool result: a file's content as
// is, search matches as "path:line: text", a listing one entry a line
// (directories end in "/"; with details, a tab, the size, a tab and the
// modification time follow), a diff as a diff, a command's exit code and
// output, an MCP tool's text; anything else as indented JSON. A refusal or
// failure reads "blocked (code): message" or "error (code): message".
//
// The text is for people and models; programs should read the structured
// observation, whose shape is stable.
func Render(obs action.Observation) string {
	var b strings.Builder
	if obs.Status != action.StatusOK {
		fmt.Fprintf(&b, "%s (%s): %s", obs.Status, obs.Code, obs.Message)
		if len(obs.Payload) > 0 {
			if body := renderPayload(obs.Payload); body != "" {
				b.WriteString("\n\n")
				b.WriteString(body)
			}
		}
		return b.String()
	}
	return renderPayload(obs.Payload)
}

func renderPayload(p map[string]any) string {
	switch {
	case p == nil:
		return ""
	case isList(p["matches"]):
		return renderMatches(p)
	case isList(p["entries"]):
		return renderEntries(p)
	case isString(p["diff"]):
		return renderDiff(p)
	case isString(p["stdout"]) || isString(p["stderr"]):
		return renderCommand(p)
	case isString(p["content"]) && isString(p["path"]):
		return renderFile(p)
	case isString(p["text"]) && isString(p["server"]):
		return p["text"].(string)
	}
	return indentJSON(p)
}

func renderMatches(p map[string]any) string {
	var b strings.Builder
	ms := maps(p["matches"])
	for _, mm := range ms {
		fmt.Fprintf(&b, "%v:%v: %v\n", mm["path"], mm["line"], mm["text"])
	}
	if len(ms) == 0 {
		fmt.Fprintf(&b, "no matches for %v\n", p["query"])
	}
	if truthy(p["truncated"]) {
		b.WriteString("… (more matches were not searched or not shown)\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func renderEntries(p map[string]any) string {
	text, _ := renderEntriesExact(p, false)
	return text
}

// renderEntriesExact renders a listing as Render does and reports, from
// the same pass over its entries, whether the text tells everything the
// entries say (see entriesInText). A runtime's typed listing is read as
// it is; a generic one (maps, as decoded from JSON) entry by entry.
func renderEntriesExact(p map[string]any, kept bool) (string, bool) {
	truncated := truthy(p["truncated"])
	if es, ok := p["entries"].(action.Entries); ok {
		return renderTypedEntries(es, truncated, kept)
	}
	ms := maps(p["entries"])
	es := make(action.Entries, len(ms))
	exact := len(ms) == listLen(p["entries"])
	for i, em := range ms {
		var shaped bool
		es[i], shaped = entryOfMap(em)
		exact = exact && shaped
	}
	text, typedExact := renderTypedEntries(es, truncated, true) // es is this call's own
	return text, exact && typedExact
}

// entryOfMap reads a generic listing entry, and reports whether it has the
// shape of a typed one: a string path, and no field but path, name, type
// and (both or neither) size and mod_time.
func entryOfMap(em map[string]any) (action.Entry, bool) {
	path, ok := em["path"].(string)
	if !ok {
		path = fmt.Sprint(em["path"])
	}
	e := action.Entry{Path: path}
	e.Name, _ = em["name"].(string)
	e.Type, _ = em["type"].(string)
	size, sized := em["size"].(int64)
	modTime, timed := em["mod_time"].(string)
	if sized && timed {
		e.Detailed, e.Size, e.ModTime = true, size, modTime
	}
	return e, ok && (len(em) == 3 || len(em) == 5 && e.Detailed)
}

// renderTypedEntries renders a typed listing, one entry a line: its path,
// a directory's ending in "/", then, with details, a tab, its size, a tab
// and its modification time; and reports whether the text tells every
// entry whole (exactTypedEntry). kept says that es never changes, now
// or later (see renderedListings).
func renderTypedEntries(es action.Entries, truncated, kept bool) (string, bool) {
	if text, exact, ok := rememberedListing(es, truncated, kept); ok {
		return text, exact
	}
	text, exact := renderTypedEntriesNew(es, truncated)
	rememberListing(es, truncated, kept, text, exact)
	return text, exact
}

// renderTypedEntriesNew is renderTypedEntries without the memo.
func renderTypedEntriesNew(es action.Entries, truncated bool) (string, bool) {
	n := 32
	for i := range es {
		n += len(es[i].Path) + 2
		if es[i].Detailed {
			n += len(es[i].ModTime) + 24
		}
	}
	b := make([]byte, 0, n)
	exact := len(es) > 0
	for i := range es {
		e := &es[i]
		b = append(b, e.Path...)
		if e.Type == "dir" {
			b = append(b, '/')
		}
		if e.Detailed {
			b = append(b, '\t')
			b = strconv.AppendInt(b, e.Size, 10)
			b = append(b, '\t')
			b = append(b, e.ModTime...)
		}
		b = append(b, '\n')
		exact = exact && exactTypedEntry(e)
	}
	if len(es) == 0 {
		b = append(b, "(empty)\n"...)
	}
	if truncated {
		b = append(b, "… (more entries not shown)\n"...)
	}
	return strings.TrimSuffix(unsafe.String(unsafe.SliceData(b), len(b)), "\n"), exact
}

// exactTypedEntry reports whether the line of e tells everything e says:
// a file or a directory whose path reads back as one line with its name
// as the last element and, when detailed, a time without tabs or line
// breaks.
func exactTypedEntry(e *action.Entry) bool {
	if e.Detailed && (e.ModTime == "" || hasAnyOf(e.ModTime, '\t', '\n', '\r')) {
		return false
	}
	path, name := e.Path, e.Name
	if path == "" || path[len(path)-1] == '/' || (e.Type != "file" && e.Type != "dir") ||
		len(name) > len(path) || path[len(path)-len(name):] != name {
		return false
	}
	// The name ends the path: it must be all of the last element (no "/"
	// in it, and one just before it), and no line break anywhere.
	if i := len(path) - len(name) - 1; i >= 0 && path[i] != '/' {
		return false
	}
	return !hasAnyOf(path[:len(path)-len(name)], '\n', '\r', 0) && !hasAnyOf(name, '\n', '\r', '/')
}

// hasAnyOf reports whether s holds the byte a, b or c (c 0: only a or b
// are looked for, and a NUL byte is not), eight bytes at a time.
func hasAnyOf(s string, a, b, c byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	zero := func(x uint64) uint64 { return (x - ones) &^ x & highs } // a marked byte: a zero byte of x, or a borrow above one
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		m := zero(x^(ones*uint64(a))) | zero(x^(ones*uint64(b)))
		if c != 0 {
			m |= zero(x ^ (ones * uint64(c)))
		}
		if m != 0 {
			break // a match, or a borrow: the bytes decide
		}
	}
	for ; i < len(s); i++ {
		if s[i] == a || s[i] == b || (c != 0 && s[i] == c) {
			return true
		}
	}
	return false
}

// InText is the payload key under which the structured content of a tool
// result lists the payload fields it leaves out because the text block
// carries them whole, so that a client does not receive and parse them
// twice:
//
//   - "content" (a file read as text): the text block is the file's
//     content, followed, when the payload says truncated, by a line saying
//     so;
//   - "entries" (a listing whose every entry is a file or a directory):
//     the text block has one entry a line: its path, a directory's ending
//     in "/", then, when the listing has details, a tab, its size in
//     bytes, a tab and its modification time (RFC 3339); an entry's name
//     is the last element of its path.
//
// Any other field, and any listing or read that the text does not carry
// exactly (symlinks, a name with a line break, binary content), stays in
// the structured content.
const InText = "in_text"

// carriedByText returns the payload field of obs that Render carries
// whole, or "".
func carriedByText(obs action.Observation) string {
	if obs.Status != action.StatusOK {
		return ""
	}
	p := obs.Payload
	switch {
	case isList(p["matches"]):
		return ""
	case isList(p["entries"]):
		if entriesInText(p["entries"]) {
			return "entries"
		}
	case isString(p["diff"]) || isString(p["stdout"]) || isString(p["stderr"]):
	case isString(p["content"]) && isString(p["path"]):
		if !truthy(p["binary"]) && p["content"] != "" {
			return "content"
		}
	}
	return ""
}

// entriesInText reports whether a listing's text, one path a line with
// directories marked, tells everything its entries say.
func entriesInText(v any) bool {
	es, ok := v.(action.Entries)
	if !ok {
		ms := maps(v)
		if len(ms) != listLen(v) {
			return false
		}
		es = make(action.Entries, len(ms))
		for i, em := range ms {
			var shaped bool
			if es[i], shaped = entryOfMap(em); !shaped {
				return false
			}
		}
	}
	if len(es) == 0 {
		return false // an empty listing reads "(empty)", like a file of that name
	}
	for i := range es {
		if !exactTypedEntry(&es[i]) {
			return false
		}
	}
	return true
}

// renderResult is Render(obs) and carriedByText(obs), with a listing's
// entries walked once for both. obs is the tool handler's, whose payload
// nothing changes after (see renderedListings).
func renderResult(obs action.Observation) (text, carried string) {
	p := obs.Payload
	if obs.Status == action.StatusOK && !isList(p["matches"]) && isList(p["entries"]) {
		text, exact := renderEntriesExact(p, true)
		if exact {
			return text, "entries"
		}
		return text, ""
	}
	return Render(obs), carriedByText(obs)
}

// listLen is the length of a list of any kind isList accepts.
func listLen(v any) int {
	switch l := v.(type) {
	case []any:
		return len(l)
	case []map[string]any:
		return len(l)
	case []string:
		return len(l)
	case action.Entries:
		return len(l)
	}
	return 0
}

func renderDiff(p map[string]any) string {
	d := p["diff"].(string)
	if d == "" {
		return "(no changes)"
	}
	return strings.TrimSuffix(d, "\n")
}

func renderCommand(p map[string]any) string {
	var b strings.Builder
	if isList(p["argv"]) {
		b.WriteString(argvLine(p["argv"]))
		b.WriteByte('\n')
	}
	if code, ok := p["exit_code"]; ok {
		fmt.Fprintf(&b, "exit code %v\n", code)
	}
	for _, k := range []string{"stdout", "stderr"} {
		if s, _ := p[k].(string); s != "" {
			fmt.Fprintf(&b, "--- %s\n%s", k, s)
			if !strings.HasSuffix(s, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	if truthy(p["truncated"]) {
		b.WriteString("… (output truncated)\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func renderFile(p map[string]any) string {
	if truthy(p["binary"]) {
		return fmt.Sprintf("%v: binary file, %v bytes", p["path"], p["size"])
	}
	s := p["content"].(string)
	if truthy(p["truncated"]) {
		s += fmt.Sprintf("\n… (truncated: %v has %v lines, %v bytes)", p["path"], p["lines"], p["size"])
	}
	return s
}

// renderPreview is what the person is asked to confirm: the diff of a
// patch, the argv of a command, or the (sanitized) input.
func renderPreview(p map[string]any) string {
	switch {
	case isString(p["diff"]):
		return renderDiff(p)
	case isList(p["argv"]):
		var b strings.Builder
		b.WriteString(argvLine(p["argv"]))
		rest := make(map[string]any, len(p))
		for k, v := range p {
			if k != "argv" {
				rest[k] = v
			}
		}
		if len(rest) > 0 {
			b.WriteString("\n")
			b.WriteString(indentJSON(rest))
		}
		return b.String()
	}
	return indentJSON(p)
}

func indentJSON(v any) string {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}

func isString(v any) bool { _, ok := v.(string); return ok }

func isList(v any) bool {
	switch v.(type) {
	case []any, []map[string]any, []string, action.Entries:
		return true
	}
	return false
}

// maps returns the objects of a list, whether it came from JSON ([]any) or
// straight from a Go runtime ([]map[string]any).
func maps(v any) []map[string]any {
	switch l := v.(type) {
	case []map[string]any:
		return l
	case action.Entries:
		out := make([]map[string]any, len(l))
		for i, e := range l {
			out[i] = e.Map()
		}
		return out
	case []any:
		out := make([]map[string]any, 0, len(l))
		for _, e := range l {
			if m, ok := e.(map[string]any); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return nil
}

// argvLine renders an argv list as a shell-like line, quoting words that
// need it so that the person sees exactly the arguments.
func argvLine(v any) string {
	var words []string
	switch l := v.(type) {
	case []string:
		words = l
	case []any:
		for _, w := range l {
			words = append(words, fmt.Sprint(w))
		}
	}
	var b strings.Builder
	b.WriteString("$")
	for _, w := range words {
		b.WriteByte(' ')
		if w == "" || strings.ContainsAny(w, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			b.WriteString(strconv.Quote(w))
		} else {
			b.WriteString(w)
		}
	}
	return b.String()
}

func truthy(v any) bool { b, _ := v.(bool); return b }
