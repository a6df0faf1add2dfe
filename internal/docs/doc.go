// Package docs holds the tests that keep the repository's documentation
// true: the README's Go programs compile against the packages as they are,
// and `make fuzz` does what the README says it does.
package docs
