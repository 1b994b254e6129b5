// Package archtest holds wanlab's architecture test: which of its packages
// may import which, written down as data and checked (deps_test.go), so that
// the shape described in docs/architecture.md cannot drift silently.
package archtest
