package config

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// problem is one thing wrong with a configuration, placed where a person
// finds it: the file's line (0 when the value did not come from the file),
// or the environment variable that set it.
type problem struct {
	line int
	env  string // the variable that set the value, when one did
	key  string // harness.workspace.root, harness.auth.keys[0].sha256
	why  string
}

func (p problem) String() string {
	var b strings.Builder
	switch {
	case p.env != "":
		b.WriteString("$" + p.env + ": ")
	case p.line > 0:
		b.WriteString("line " + strconv.Itoa(p.line) + ": ")
	}
	if p.key != "" {
		b.WriteString(p.key + ": ")
	}
	b.WriteString(p.why)
	return b.String()
}

// place is where a value of the configuration came from.
type place struct {
	key  string // as a person writes it: harness.mcp.servers.fs.command
	line int
	env  string
}

// decoder reads a YAML tree into a Config by walking the tree and the Go
// type together, so that one wrong value does not hide the others: every
// unknown key and every value of the wrong type is a problem, the rest is
// decoded, and the value checks then run on what was decoded.
type decoder struct {
	problems []problem
	// places maps the validator's namespace of each value read
	// ("harness.mcp.servers[fs].command") to where it came from.
	places map[string]place
	// broken holds the namespaces of values that had the wrong type, whose
	// zero value the value checks must not complain about a second time.
	broken map[string]bool
	// work bounds the nodes visited, which aliases and merge keys could
	// otherwise multiply without end (a file found in a workspace root
	// is not necessarily the operator's own).
	work int
}

// maxWork is far beyond any configuration a person writes.
const maxWork = 1 << 20

func newDecoder() *decoder {
	return &decoder{places: map[string]place{}, broken: map[string]bool{}, work: maxWork}
}

// spend counts one node visited and reports whether the walk may go on.
func (d *decoder) spend(n *yaml.Node) bool {
	d.work--
	if d.work == 0 {
		d.add(n.Line, "", "too many values (aliases expanding without end?): stopped here")
	}
	return d.work > 0
}

func (d *decoder) add(line int, key, why string) {
	d.problems = append(d.problems, problem{line: line, key: key, why: why})
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// decodeYAML reads data into c. It returns false when the data is not YAML
// at all (the syntax problem is recorded).
func (d *decoder) decodeYAML(data []byte, c *Config) bool {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return true // empty: every default
		}
		d.syntax(err)
		return false
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		d.add(more.Line, "", "a second YAML document (after ---): the configuration is one document")
	} else if !errors.Is(err, io.EOF) {
		d.syntax(err)
		return false
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return true
		}
		root = root.Content[0]
	}
	d.value(root, reflect.ValueOf(c).Elem(), "", "")
	return true
}

// parserProblems are the YAML library's parser errors (its scanner's
// differ), whose line it reports counting from 0.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected key",
	"did not find expected node content", "did not find expected <document start>",
	"found undefined tag handle", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
}

func (d *decoder) syntax(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	if slices.Contains(parserProblems, msg) {
		line++
	}
	d.add(line, "", "not valid YAML: "+msg)
}

// value decodes n into v. key is the path a person reads, ns the
// validator's namespace of the same value.
func (d *decoder) value(n *yaml.Node, v reflect.Value, key, ns string) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if !d.spend(n) {
		d.broken[ns] = true
		return
	}
	if ns != "" {
		d.places[ns] = place{key: key, line: n.Line}
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		v.SetZero()
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		if d.value(n, e.Elem(), key, ns); !d.broken[ns] {
			v.Set(e)
		}
	case reflect.Struct:
		if !d.want(n, yaml.MappingNode, v.Type(), key, ns) {
			return
		}
		fields := yamlFields(v.Type())
		for _, kv := range d.pairs(n, key) {
			name := kv.key.Value
			i, ok := fields[name]
			if !ok {
				why, sibling := suggestKey(v.Type(), key, name)
				d.add(kv.key.Line, join(key, name), "unknown key; "+why)
				if sibling != "" {
					// A misspelt key is not also a missing one.
					d.broken[join(ns, sibling)] = true
				}
				continue
			}
			d.value(kv.val, v.Field(i), join(key, name), join(ns, name))
		}
	case reflect.Map:
		if !d.want(n, yaml.MappingNode, v.Type(), key, ns) {
			return
		}
		m := reflect.MakeMap(v.Type())
		for _, kv := range d.pairs(n, key) {
			e := reflect.New(v.Type().Elem()).Elem()
			ens := ns + "[" + kv.key.Value + "]"
			d.value(kv.val, e, join(key, kv.key.Value), ens)
			m.SetMapIndex(reflect.ValueOf(kv.key.Value).Convert(v.Type().Key()), e)
		}
		v.Set(m)
	case reflect.Slice:
		if !d.want(n, yaml.SequenceNode, v.Type(), key, ns) {
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			idx := "[" + strconv.Itoa(i) + "]"
			d.value(e, s.Index(i), key+idx, ns+idx)
		}
		v.Set(s)
	case reflect.Interface:
		// Free-form values (a rule's example inputs) are taken as YAML
		// gives them.
		var x any
		if err := n.Decode(&x); err != nil {
			d.broken[ns] = true
			d.add(n.Line, key, err.Error())
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		if !d.want(n, yaml.ScalarNode, v.Type(), key, ns) {
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.broken[ns] = true
			d.add(n.Line, key, fmt.Sprintf("must be %s, not %s", typeWords(v.Type()), strconv.Quote(n.Value)))
		}
	}
}

// want reports whether n is of kind k, and records the problem when not.
func (d *decoder) want(n *yaml.Node, k yaml.Kind, t reflect.Type, key, ns string) bool {
	if n.Kind == k {
		return true
	}
	d.broken[ns] = true
	d.add(n.Line, key, fmt.Sprintf("must be %s, not %s", typeWords(t), nodeWords(n)))
	return false
}

type pair struct{ key, val *yaml.Node }

// pairs returns a mapping's entries with YAML merge keys (<<: *base)
// expanded, the mapping's own keys winning; a key set twice is a problem.
func (d *decoder) pairs(n *yaml.Node, key string) []pair {
	var out []pair
	seen := map[string]int{}
	var merged []pair
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !d.spend(k) {
			return out
		}
		if k.Kind != yaml.ScalarNode {
			d.add(k.Line, key, "a key must be a plain name, not "+nodeWords(k))
			continue
		}
		if k.Tag == "!!merge" {
			merged = append(merged, d.mergePairs(v, key)...)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.add(k.Line, join(key, k.Value), "set twice (first on line "+strconv.Itoa(first)+")")
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, pair{k, v})
	}
	for _, p := range merged {
		if _, ok := seen[p.key.Value]; !ok {
			seen[p.key.Value] = p.key.Line
			out = append(out, p)
		}
	}
	return out
}

func (d *decoder) mergePairs(v *yaml.Node, key string) []pair {
	for v.Kind == yaml.AliasNode && v.Alias != nil {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		return d.pairs(v, key)
	case yaml.SequenceNode:
		var out []pair
		for _, e := range v.Content {
			if !d.spend(e) {
				break
			}
			out = append(out, d.mergePairs(e, key)...)
		}
		return out
	}
	d.add(v.Line, key, "<< must merge a mapping, not "+nodeWords(v))
	return nil
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// yamlFields maps a struct's YAML key names to field indexes.
func yamlFields(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		if name := yamlName(t.Field(i)); name != "" {
			m[name] = i
		}
	}
	return m
}

// yamlName is the key of a struct field in the file, "" for none.
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// typeWords names what a value of type t looks like in YAML.
func typeWords(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeWords(t.Elem())
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + plural(t.Elem())
	case reflect.Map:
		if t.Elem().Kind() == reflect.Struct {
			return "a mapping of names to mappings"
		}
		return "a mapping of names to " + plural(t.Elem())
	case reflect.Struct:
		return "a mapping"
	}
	return "a " + t.Kind().String()
}

func plural(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return plural(t.Elem())
	case reflect.Bool:
		return "true or false values"
	case reflect.Struct, reflect.Map:
		return "mappings"
	case reflect.Slice:
		return "lists of " + plural(t.Elem())
	}
	w := typeWords(t)
	return strings.TrimPrefix(w, "a ") + "s"
}

// nodeWords says what a person wrote, for "must be X, not Y".
func nodeWords(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "that"
}
