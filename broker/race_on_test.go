//go:build race

package broker

// raceDetector reports a -race build: sync.Pool then drops a quarter of what is put
// back, so pooled writers and buffers are allocated again and allocation totals run
// higher.
const raceDetector = true
