package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v2"
)

// Version is the release version, set at link time with
// -ldflags "-X github.com/petrel-broker/petrel/cli.Version=v1.2.3". Left empty, the
// module version from the build information is used (v1.2.3 for `go install
// github.com/petrel-broker/petrel@v1.2.3`, a pseudo-version or (devel) for a build from a
// checkout).
var Version = ""

// buildVersion is what `petrel version` and `petrel --version` print.
type buildVersion struct {
	Version  string `json:"version"`  // release or module version; "(devel)" when unknown
	Commit   string `json:"commit"`   // VCS revision; "" when the build did not record it
	Modified bool   `json:"modified"` // the build's working tree had uncommitted changes
	Go       string `json:"go"`       // the Go toolchain
	Platform string `json:"platform"` // GOOS/GOARCH
}

// readBuildVersion reads the running binary's build information.
func readBuildVersion() buildVersion {
	info, _ := debug.ReadBuildInfo()
	return versionFromBuildInfo(info, Version)
}

// versionFromBuildInfo is buildVersion from info (nil: none) and the link-time
// version.
func versionFromBuildInfo(info *debug.BuildInfo, linked string) buildVersion {
	v := buildVersion{Version: linked, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if info != nil {
		if v.Version == "" {
			v.Version = info.Main.Version
		}
		if info.GoVersion != "" {
			v.Go = info.GoVersion
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	return v
}

// String is the one-line form: petrel v1.2.3 (commit 0123456789ab, modified; go1.26.0 linux/amd64).
func (v buildVersion) String() string {
	commit := "commit unknown"
	if v.Commit != "" {
		commit = "commit " + v.Commit[:min(12, len(v.Commit))]
		if v.Modified {
			commit += ", modified"
		}
	}
	return fmt.Sprintf("petrel %s (%s; %s %s)", v.Version, commit, v.Go, v.Platform)
}

func versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "version",
		Usage:  "print the petrel version: module version, VCS commit, Go version (the same as petrel --version)",
		Flags:  []ucli.Flag{outputFlag()},
		Action: printVersion,
	}
}

// printVersion prints the version line (or, with -o json, the version as JSON).
func printVersion(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	v := readBuildVersion()
	if asJSON {
		return writeJSON(c.App.Writer, v)
	}
	_, err = fmt.Fprintln(c.App.Writer, v.String())
	return err
}
