package config_test

import (
	"fmt"

	"github.com/harness-runtime/harness/config"
)

// A configuration with mistakes is refused with every problem, each with
// its line, in the file's own terms.
func ExampleParse() {
	_, err := config.Parse("harness.yaml", []byte(`harness:
  disabled-actions: [workspace_serch_text]
  workspace:
    write-enabeld: false
    command-timeout-seconds: 10s
`))
	fmt.Println(err)
	// Output:
	// config harness.yaml: 3 problem(s):
	//   line 2: harness.disabled-actions[0]: "workspace_serch_text" is not a registered action; did you mean workspace_search_text?
	//   line 4: harness.workspace.write-enabeld: unknown key; did you mean write-enabled?
	//   line 5: harness.workspace.command-timeout-seconds: must be a whole number, not "10s"
}

// A program that registers its own actions names them, so that the
// configuration may list them.
func ExampleWithActions() {
	cfg, err := config.Parse("harness.yaml", []byte("harness:\n  auto-approved-actions: [lookup_order]\n"),
		config.WithActions("lookup_order"))
	fmt.Println(cfg.Harness.AutoApprovedActions, err)
	// Output:
	// [lookup_order] <nil>
}
