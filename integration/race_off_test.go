//go:build !race

package integration

// raceDetector reports a -race build (see race_on_test.go).
const raceDetector = false
