package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"
)

// Run runs the petrel command line with args (os.Args) and returns the process exit code.
func Run(args []string) int {
	return RunWithIO(args, os.Stdout, os.Stderr)
}

// RunWithIO is Run with explicit output streams, for tests.
func RunWithIO(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	if err := app.Run(args); err != nil {
		fmt.Fprintf(stderr, "petrel: %v\n", err)
		return 1
	}
	return 0
}

func newApp(stdout, stderr io.Writer) *ucli.App {
	return &ucli.App{
		Name:      "petrel",
		Usage:     "a Kafka-compatible streaming broker in one binary",
		Version:   versionString(),
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []ucli.Flag{
			&ucli.StringFlag{
				Name:    "log-level",
				Usage:   "log level: trace, debug, info, warn, error",
				Value:   "info",
				EnvVars: []string{"PETREL_LOG_LEVEL"},
			},
		},
		Commands: []*ucli.Command{
			serverCommand(),
			devCommand(),
			versionCommand(),
			topicsCommand(),
			groupsCommand(),
			produceCommand(),
			consumeCommand(),
			clusterCommand(),
			producersCommand(),
			configsCommand(),
			usersCommand(),
			leaderElectionCommand(),
			deleteRecordsCommand(),
			logDirsCommand(),
			transactionsCommand(),
			perfCommand(),
			reassignCommand(),
			topCommand(),
			aclsCommand(),
			quotasCommand(),
		},
		// Errors are printed once by RunWithIO.
		ExitErrHandler: func(*ucli.Context, error) {},
	}
}

// newLogger builds the process logger from the global --log-level flag. Every log line
// in petrel goes through go-hclog.
func newLogger(c *ucli.Context) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "petrel",
		Level:  hclog.LevelFromString(c.String("log-level")),
		Output: c.App.ErrWriter,
	})
}
