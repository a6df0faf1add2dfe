package main

import (
	"io"
	"log/slog"
	"os"
	"strings"
)

// logFormat is the --log-format of this run: "text", "json", or "" for
// text when stderr is a terminal and JSON otherwise.
var logFormat string

// takeLogFormat removes --log-format VALUE (or =VALUE) from args, wherever
// it stands, and returns the rest; every command takes it.
func takeLogFormat(args []string) ([]string, string, bool) {
	out := make([]string, 0, len(args))
	format, ok := "", true
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...), format, ok
		case a == "--log-format" || a == "-log-format":
			if i+1 >= len(args) {
				return out, "", false
			}
			format = args[i+1]
			i++
		case strings.HasPrefix(a, "--log-format=") || strings.HasPrefix(a, "-log-format="):
			format = a[strings.IndexByte(a, '=')+1:]
		default:
			out = append(out, a)
			continue
		}
		if format != "text" && format != "json" {
			ok = false
		}
	}
	return out, format, ok
}

// newLogger writes records at level and above to w in the run's format.
func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	format := logFormat
	if format == "" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
