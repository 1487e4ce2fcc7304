// Package testwait is the one wait-for-condition helper of the tests:
// they wait on conditions, never on sleeps, and every package's own
// waitFor or waitUntil is a thin adapter over this one. It does not
// import package testing (TB is the part of testing.TB it needs), so
// helpers shipped with the product can use it too.
package testwait
