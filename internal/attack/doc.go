// Package attack runs the command sandbox's attack classes end to end,
// through the entry points a user has (the CLI binary, the HTTP service,
// the Go library), against the binaries as built: code the workspace
// controls (a Makefile recipe) tries to read the service's environment,
// plant a git hook, outlive the action and read /etc/shadow.
package attack
