package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/go-playground/validator/v10"
)

var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		return name // "-" makes the validator skip the field
	})
	_ = v.RegisterValidation("store", func(fl validator.FieldLevel) bool {
		s := fl.Field().String()
		return s == "memory" || strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://")
	})
	return v
}

// check runs the value checks (the validate tags) and the action names'
// check on what was decoded, leaving out values whose type was already
// wrong.
func (d *decoder) check(c *Config, o *options) {
	if err := validate.Struct(c); err != nil {
		var verrs validator.ValidationErrors
		if !errors.As(err, &verrs) {
			d.add(0, "", err.Error())
		}
		for _, fe := range verrs {
			ns := keyPath(fe.Namespace())
			if d.isBroken(ns) {
				continue
			}
			other := ""
			if fe.Param() != "" {
				other = siblingKey(fe.StructNamespace(), fe.Param())
			}
			if other != "" && d.isBroken(parentNS(ns)+"."+other) {
				continue // required_without a value that was there, only wrong
			}
			var p problem
			switch {
			case strings.HasSuffix(ns, "[]"):
				p = d.at(parentNS(ns))
				p.why = "a name here cannot be empty"
			case fe.Tag() == "required_without" || fe.Tag() == "excluded_with":
				// One problem for the pair, whichever field it came from.
				p = d.at(parentNS(ns))
				pair := []string{fe.Field(), other}
				sort.Strings(pair)
				p.why = "set " + pair[0] + " or " + pair[1]
				if fe.Tag() == "excluded_with" {
					p.why += ", not both"
				}
			default:
				p = d.at(ns)
				p.why = why(fe)
			}
			d.problems = append(d.problems, p)
		}
	}
	d.problems = append(d.problems, c.Harness.checkActions(o, d.at)...)
	d.problems = append(d.problems, c.Harness.checkRules(o, d.at)...)
	d.problems = append(d.problems, c.Harness.checkAHP(d.at)...)
}

// at places the value at the validator's namespace ns: its own line when
// it was read, else its nearest enclosing key's (a required key that is
// missing is reported where its mapping is).
func (d *decoder) at(ns string) problem {
	for n := ns; n != ""; n = parentNS(n) {
		if pl, ok := d.places[n]; ok {
			key := pl.key
			if n != ns {
				key = displayKey(ns)
			}
			return problem{line: pl.line, env: pl.env, key: key}
		}
	}
	return problem{key: displayKey(ns)}
}

func (d *decoder) isBroken(ns string) bool {
	for n := ns; n != ""; n = parentNS(n) {
		if d.broken[n] {
			return true
		}
	}
	return false
}

// err returns the problems, in the file's order, as a *ConfigError.
func (d *decoder) err(file string) error {
	if len(d.problems) == 0 {
		return nil
	}
	sort.SliceStable(d.problems, func(i, j int) bool {
		a, b := d.problems[i], d.problems[j]
		if (a.line == 0) != (b.line == 0) {
			return b.line == 0 // what the file says first, then the rest
		}
		if a.line != b.line {
			return a.line < b.line
		}
		return a.String() < b.String()
	})
	e := &ConfigError{File: file}
	for i, p := range d.problems {
		s := p.String()
		if i > 0 && s == e.Problems[len(e.Problems)-1] {
			continue
		}
		e.Problems = append(e.Problems, s)
	}
	return e
}

// keyPath turns validator's "Config.harness.workspace.sandbox" into
// "harness.workspace.sandbox".
func keyPath(ns string) string {
	_, rest, ok := strings.Cut(ns, ".")
	if !ok {
		return ns
	}
	return rest
}

// parentNS drops the last key or index of a namespace.
func parentNS(ns string) string {
	if strings.HasSuffix(ns, "]") {
		if i := strings.LastIndexByte(ns, '['); i >= 0 {
			return ns[:i]
		}
	}
	if i := strings.LastIndexByte(ns, '.'); i >= 0 {
		return ns[:i]
	}
	return ""
}

var mapIndex = regexp.MustCompile(`\[([^\]]*[^\]0-9][^\]]*)\]`)

// displayKey writes a namespace as a person reads the file: a mapping's
// names are keys (harness.mcp.servers.fs), a list's positions indexes.
func displayKey(ns string) string {
	return mapIndex.ReplaceAllString(ns, ".$1")
}

// siblingKey returns the YAML key of the Go field named param in the
// struct that holds the field at the validator's struct namespace sns
// ("Config.Harness.MCP.Servers[fs].Command"), "" when there is none.
func siblingKey(sns, param string) string {
	segs := strings.Split(sns, ".")
	t := reflect.TypeFor[Config]()
	for _, seg := range segs[1 : len(segs)-1] {
		name, _, _ := strings.Cut(seg, "[")
		f, ok := t.FieldByName(name)
		if !ok {
			return ""
		}
		t = f.Type
		for range strings.Count(seg, "[") {
			t = t.Elem()
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
	}
	f, ok := t.FieldByName(param)
	if !ok {
		return ""
	}
	return yamlName(f)
}

func why(fe validator.FieldError) string {
	switch fe.Tag() {
	case "oneof":
		return fmt.Sprintf("%q is not one of: %s", fmt.Sprint(fe.Value()), fe.Param())
	case "required":
		return "is required"
	case "gte":
		return "must be at least " + fe.Param()
	case "lte":
		return "must be at most " + fe.Param()
	case "len":
		return fmt.Sprintf("must be %s characters long", fe.Param())
	case "hexadecimal":
		return "must be hexadecimal (the sha256 of the bearer token)"
	case "url":
		return fmt.Sprintf("%q is not a URL", fmt.Sprint(fe.Value()))
	case "store":
		return fmt.Sprintf("%q is neither memory nor redis://host:port/db", fmt.Sprint(fe.Value()))
	case "excludesall":
		if fe.Param() == "=" {
			return fmt.Sprintf("%q: a variable's name cannot hold =", fmt.Sprint(fe.Value()))
		}
		return fmt.Sprintf("%q must be a bare command name, not a path", fmt.Sprint(fe.Value()))
	case "min":
		return "needs at least " + fe.Param() + " item(s)"
	}
	return fmt.Sprintf("fails %s %s", fe.Tag(), fe.Param())
}
