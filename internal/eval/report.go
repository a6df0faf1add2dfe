package eval

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report for people: one line per scenario, one
// column per entry point showing status/code and, in brackets, how many
// audit records name the action ("x" marks a cell that differs), the
// deciding step every entry point must give, the reasons of n/a and
// pending cells, every difference, and a last line with their number.
func (r Report) WriteTable(w io.Writer) error {
	var notes []string
	note := func(reason string) int {
		for i, n := range notes {
			if n == reason {
				return i + 1
			}
		}
		notes = append(notes, reason)
		return len(notes)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"scenario"}
	for _, e := range r.Entries {
		head = append(head, string(e))
	}
	head = append(head, "decided by")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, row := range r.Rows {
		line := []string{row.Scenario.Name}
		for _, c := range row.Cells {
			switch {
			case c.Pending != "":
				line = append(line, fmt.Sprintf("pending (%d)", note(c.Pending)))
			case c.NA != "":
				line = append(line, fmt.Sprintf("n/a (%d)", note(c.NA)))
			default:
				s := "-"
				if c.Got.Status != "" {
					s = string(c.Got.Status)
					if c.Got.Code != "" {
						s += "/" + string(c.Got.Code)
					}
				}
				s += fmt.Sprintf(" [%d]", len(c.Records))
				if len(c.Problems) > 0 {
					s += " x"
				}
				line = append(line, s)
			}
		}
		step := row.Scenario.Want.Step
		if step == "" {
			step = "-"
		}
		line = append(line, step)
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\n[n]: audit records naming the action. decided by: the guard step every entry point's decision must name (- : none, the guard allowed).")
	for i, n := range notes {
		fmt.Fprintf(w, "(%d) %s\n", i+1, n)
	}
	diffs := r.Differences()
	if len(diffs) > 0 {
		fmt.Fprintln(w, "\nDifferences:")
		for _, d := range diffs {
			fmt.Fprintln(w, "  "+d)
		}
	}
	_, err := fmt.Fprintf(w, "\n%d differences\n", len(diffs))
	return err
}
