package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestLogFormatFlag(t *testing.T) {
	cases := []struct {
		args   []string
		rest   string
		format string
		ok     bool
	}{
		{[]string{"run", "x", "--log-format", "json"}, "run x", "json", true},
		{[]string{"--log-format=text", "serve"}, "serve", "text", true},
		{[]string{"run", "--log-format", "yaml"}, "run", "yaml", false},
		{[]string{"run", "--log-format"}, "run", "", false},
		{[]string{"run", "--", "--log-format", "json"}, "run -- --log-format json", "", true},
	}
	for _, c := range cases {
		rest, format, ok := takeLogFormat(c.args)
		if strings.Join(rest, " ") != c.rest || format != c.format || ok != c.ok {
			t.Errorf("%v: got %v %q %v", c.args, rest, format, ok)
		}
	}
	defer func() { logFormat = "" }()
	var b bytes.Buffer
	logFormat = "json"
	newLogger(&b, slog.LevelInfo).Info("hello")
	if !strings.HasPrefix(b.String(), "{") {
		t.Fatalf("json: %q", b.String())
	}
	b.Reset()
	logFormat = "text"
	newLogger(&b, slog.LevelInfo).Info("hello")
	if !strings.Contains(b.String(), "msg=hello") {
		t.Fatalf("text: %q", b.String())
	}
	b.Reset()
	logFormat = "" // not a terminal: JSON
	newLogger(&b, slog.LevelInfo).Info("hello")
	if !strings.HasPrefix(b.String(), "{") {
		t.Fatalf("default off a terminal: %q", b.String())
	}
	if code, _, errOut := runCLI("version", "--log-format", "xml"); code != exitUsage || !strings.Contains(errOut, "--log-format") {
		t.Fatalf("bad format: %d %q", code, errOut)
	}
}
