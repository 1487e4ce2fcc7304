//go:build race

package store

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = true
