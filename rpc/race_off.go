//go:build !race

package rpc

// raceEnabled reports a -race build: released frames are then scribbled over
// (framepool.go).
const raceEnabled = false
