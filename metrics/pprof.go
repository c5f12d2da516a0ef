package metrics

import (
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
)

// PprofEnv names the environment variable that, set to 1, serves Go's profiles under
// /debug/pprof/ on the metrics listener and turns block and mutex profiling on. It is
// for profiling benchmarks (docs/benchmarks.md) and off by default: profiles expose
// internals, and block and mutex profiling cost a little on every contended lock.
const PprofEnv = "PETREL_PPROF"

// mountPprof adds the profile handlers to mux when PprofEnv is 1.
func mountPprof(mux *http.ServeMux) {
	if os.Getenv(PprofEnv) != "1" {
		return
	}
	runtime.SetBlockProfileRate(10_000) // one sample per 10 µs blocked
	runtime.SetMutexProfileFraction(10)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
