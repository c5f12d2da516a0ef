package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// StopProfileEnv names the environment variable that, set to a directory, profiles a
// `petrel server`'s clean stop from the signal to the end of Shutdown: stop-cpu.prof,
// stop-block.prof, stop-mutex.prof and stop-goroutine.prof (at the signal) in that
// directory (block and mutex also as stop-block-base.prof and stop-mutex-base.prof at
// the signal), and stop-trace.out (a runtime/trace) when StopTraceEnv is 1. It is how
// docs/bench/partitions.sh profiles the stopping node itself, whose metrics listener
// (PETREL_PPROF) closes before a profile taken through it could be read.
const (
	StopProfileEnv = "PETREL_STOP_PROFILE"
	StopTraceEnv   = "PETREL_STOP_TRACE"
)

// stopProfile is a running stop profile; nil when StopProfileEnv is unset.
type stopProfile struct {
	dir     string
	cpu, tr *os.File
}

// startStopProfile starts the profiles of StopProfileEnv, if set. Failures are ignored:
// profiling must never change how a broker stops.
func startStopProfile() *stopProfile {
	dir := os.Getenv(StopProfileEnv)
	if dir == "" || os.MkdirAll(dir, 0o755) != nil {
		return nil
	}
	sp := &stopProfile{dir: dir}
	sp.write("goroutine", 1)
	// The block and mutex profiles count from the start of the process when PETREL_PPROF
	// set their rates then: the -base files at the signal take that away
	// (go tool pprof -base stop-block-base.prof stop-block.prof).
	sp.write("block", 0, "-base")
	sp.write("mutex", 0, "-base")
	runtime.SetBlockProfileRate(10_000)
	runtime.SetMutexProfileFraction(10)
	if f, err := os.Create(filepath.Join(dir, "stop-cpu.prof")); err == nil {
		if pprof.StartCPUProfile(f) == nil {
			sp.cpu = f
		} else {
			f.Close()
		}
	}
	if os.Getenv(StopTraceEnv) == "1" {
		if f, err := os.Create(filepath.Join(dir, "stop-trace.out")); err == nil {
			if trace.Start(f) == nil {
				sp.tr = f
			} else {
				f.Close()
			}
		}
	}
	return sp
}

// write saves the named runtime profile as stop-<name><suffix>.prof.
func (sp *stopProfile) write(name string, debug int, suffix ...string) {
	sfx := ""
	if len(suffix) > 0 {
		sfx = suffix[0]
	}
	f, err := os.Create(filepath.Join(sp.dir, "stop-"+name+sfx+".prof"))
	if err != nil {
		return
	}
	defer f.Close()
	if p := pprof.Lookup(name); p != nil {
		_ = p.WriteTo(f, debug)
	}
}

// finish stops the profiles and writes the block and mutex profiles.
func (sp *stopProfile) finish() {
	if sp == nil {
		return
	}
	if sp.tr != nil {
		trace.Stop()
		sp.tr.Close()
	}
	if sp.cpu != nil {
		pprof.StopCPUProfile()
		sp.cpu.Close()
	}
	sp.write("block", 0)
	sp.write("mutex", 0)
}
