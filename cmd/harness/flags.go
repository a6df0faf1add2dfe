package main

import (
	"flag"
	"fmt"
	"io"
)

// newFlags returns a flag set that reports errors instead of exiting and
// prints its usage to w.
func newFlags(name, usageLine string, w io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "Usage: %s\n\nOptions:\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("harness run ACTION --input …" and "harness run --input … ACTION"),
// and returns the positional arguments in order. "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0]) // "-" (stdin) is positional too
		args = rest[1:]
	}
}
