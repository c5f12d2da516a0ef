package cli

import (
	"os"
	"runtime/pprof"
)

// ClientProfileEnv names the environment variable that, set to a file name, writes a
// CPU profile of the whole `petrel` process to it: how docs/bench/cluster-scale.sh
// profiles each `petrel topics create` client (PETREL_CREATE_PROFILE). Empty or unset:
// no profile.
const ClientProfileEnv = "PETREL_CLIENT_CPU_PROFILE"

// startClientProfile starts the CPU profile of ClientProfileEnv, if set, and returns
// the function that ends it. Failures are ignored: profiling never changes a command.
func startClientProfile() (stop func()) {
	name := os.Getenv(ClientProfileEnv)
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name)
	if err != nil {
		return func() {}
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
