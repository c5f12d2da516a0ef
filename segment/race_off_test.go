//go:build !race

package segment

// underRace reports a -race build (see race_on_test.go).
const underRace = false
