package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v2"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/petrel-broker/petrel/cli.Version=v1.2.3".
var Version = "dev"

func versionString() string {
	rev := "unknown"
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("%s (commit %s, %s)", Version, rev, runtime.Version())
}

func versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "version",
		Usage: "print the petrel version",
		Action: func(c *ucli.Context) error {
			newLogger(c).Debug("version requested")
			_, err := fmt.Fprintf(c.App.Writer, "petrel %s\n", versionString())
			return err
		},
	}
}
