//go:build race

package integration

// raceDetector reports a -race build: sync.Pool then drops a quarter of what is put
// back, so pooled buffers are allocated again and allocation totals run higher.
const raceDetector = true
