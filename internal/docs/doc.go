// Package docs holds the tests that keep the repository's documentation
// true: the README's Go programs compile against the packages as they are.
package docs
