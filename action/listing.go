package action

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// Entry is one entry of a directory listing (the "entries" of
// workspace_list_files).
type Entry struct {
	Path string // root-relative, slash-separated
	Name string // the last element of Path
	Type string // "file", "dir", "symlink" or "other"
	// Detailed: the listing asked for details, and Size (bytes, as lstat
	// reports them) and ModTime (RFC 3339, UTC) are the entry's.
	Detailed bool
	Size     int64
	ModTime  string
}

// Entries is a listing's entries as a runtime hands them over: typed, so
// that a listing of thousands of entries builds no map per entry. Its JSON
// is exactly the JSON of the generic form (Map of each entry): an array of
// objects {"mod_time", "name", "path", "size", "type"}, the first and the
// fourth only when detailed, which is also what a listing decoded from
// JSON holds. Code that reads a payload generically can call Generic.
type Entries []Entry

// Map returns e in its generic form.
func (e Entry) Map() map[string]any {
	m := map[string]any{"path": e.Path, "name": e.Name, "type": e.Type}
	if e.Detailed {
		m["size"], m["mod_time"] = e.Size, e.ModTime
	}
	return m
}

// Generic returns es in the form a listing decoded from JSON has: a
// []any of map[string]any.
func (es Entries) Generic() []any {
	out := make([]any, len(es))
	for i, e := range es {
		out[i] = e.Map()
	}
	return out
}

// CanonicalValue implements CanonicalValuer.
func (es Entries) CanonicalValue() any { return es.Generic() }

// MarshalJSON writes what encoding/json writes for Generic (encoding/json
// adds its HTML escaping to a Marshaler's output as it does to a map's
// strings).
func (es Entries) MarshalJSON() ([]byte, error) {
	n := 2
	for _, e := range es {
		n += len(e.Path) + len(e.Name) + len(e.ModTime) + 80
	}
	return es.appendJSON(make([]byte, 0, n)), nil
}

// appendJSON appends the JSON array of es, keys in encoding/json's
// (sorted) order.
func (es Entries) appendJSON(b []byte) []byte {
	b = append(b, '[')
	for i, e := range es {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		if e.Detailed {
			b = append(b, `"mod_time":`...)
			b = appendJSONText(b, e.ModTime)
			b = append(b, ',')
		}
		b = append(b, `"name":`...)
		b = appendJSONText(b, e.Name)
		b = append(b, `,"path":`...)
		b = appendJSONText(b, e.Path)
		if e.Detailed {
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, e.Size, 10)
		}
		b = append(b, `,"type":`...)
		b = appendJSONText(b, e.Type)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONText appends s as encoding/json writes it (before its HTML
// escaping): as AppendJSONString does, except that encoding/json writes
// the U+FFFD that stands for invalid UTF-8 escaped.
func appendJSONText(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return AppendJSONString(b, s)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
}

// MapStrings returns es with each of its strings replaced by f's answer,
// and whether any changed: a copy when one did (es is never changed), es
// itself when none did. A sanitizer uses it to redact a listing without
// turning it into generic values.
func (es Entries) MapStrings(f func(string) string) (any, bool) {
	var out Entries // nil until an entry changes
	for i, e := range es {
		o := e
		o.Path, o.Name, o.Type, o.ModTime = f(e.Path), f(e.Name), f(e.Type), f(e.ModTime)
		if out == nil && o != e {
			out = make(Entries, len(es))
			copy(out, es[:i])
		}
		if out != nil {
			out[i] = o
		}
	}
	if out == nil {
		return es, false
	}
	return out, true
}
