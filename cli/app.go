package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/petrel-broker/petrel/cli/perf"
	ucli "github.com/urfave/cli/v2"
)

// Run runs the petrel command line with args (os.Args) and returns the process exit code.
func Run(args []string) int {
	defer startClientProfile()()
	return RunWithIO(args, os.Stdout, os.Stderr)
}

// RunWithIO is Run with explicit output streams, for tests.
func RunWithIO(args []string, stdout, stderr io.Writer) int {
	return runApp(newApp(stdout, stderr), args, stderr)
}

// appRuns serialises runApp: urfave/cli/v2 writes its package-level help flag
// (ucli.HelpFlag) as every command parses its flags, a data race between two runs at
// once in one process (tests run commands in parallel; the binary runs one).
var appRuns sync.Mutex

// runApp runs app with args (Kafka's action flags rewritten first) and prints an error
// as one line; a flag after the arguments that the command does not define is worded as
// flag parsing's own errors are, with the nearest flag name. One run at a time (appRuns).
func runApp(app *ucli.App, args []string, stderr io.Writer) int {
	appRuns.Lock()
	defer appRuns.Unlock()
	args, err := normalizeArgs(app, args)
	if err == nil {
		err = app.Run(args)
	}
	var unknown *clientcmd.UnknownFlagError
	if errors.As(err, &unknown) {
		err = flagError(unknown.Command, unknown, unknown.Flags)
	}
	if err != nil {
		fmt.Fprintf(stderr, "petrel: %v\n", err)
		return 1
	}
	return 0
}

func newApp(stdout, stderr io.Writer) *ucli.App {
	app := &ucli.App{
		Name:      "petrel",
		Usage:     "a Kafka-compatible streaming broker in one binary",
		Writer:    stdout,
		ErrWriter: stderr,
		// --version is ours, so that it prints what `petrel version` prints.
		HideVersion:          true,
		EnableBashCompletion: true,
		Flags: []ucli.Flag{
			clientcmd.LogLevelFlag(true),
			clientcmd.LogFormatFlag(true),
			&ucli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version, as petrel version"},
		},
		Action:       appAction,
		OnUsageError: usageError(""),
		Commands: []*ucli.Command{
			serverCommand(),
			devCommand(),
			versionCommand(),
			completionCommand(),
			topicsCommand(),
			groupsCommand(),
			shareGroupsCommand(),
			clientMetricsCommand(),
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
			perf.Command(),
			reassignCommand(),
			topCommand(),
			aclsCommand(),
			quotasCommand(),
			featuresCommand(),
			verifyCommand(),
		},
		// Errors are printed once by runApp.
		ExitErrHandler: func(*ucli.Context, error) {},
	}
	finishCommands("", app.Commands)
	return app
}
