// Package testutil holds what the module's tests share: Buffer, a
// buffer that goroutines may write while a test reads it, Eventually, the
// one bounded poll for a state a test cannot be told about, and a launcher
// for the module's commands (Build compiles a main package once per test
// binary, Start and Listen run it as a child process that the test's
// cleanup stops).
//
// It is imported only from _test.go files; a test of this package fails
// when any other file of the module imports it.
package testutil
