//go:build !race

package broker

// raceDetector reports a -race build (see race_on_test.go).
const raceDetector = false
