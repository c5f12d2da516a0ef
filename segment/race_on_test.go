//go:build race

package segment

// underRace: sync.Pool drops a quarter of what is put back in a -race build, so
// allocation totals say nothing there.
const underRace = true
