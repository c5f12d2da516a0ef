package cli

import ucli "github.com/urfave/cli/v2"

// verifyCommand is `petrel verify`: consistency checks of a cluster.
func verifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "verify",
		Usage: "check a cluster's consistency: a Jepsen-style workload",
		Subcommands: []*ucli.Command{
			verifyWorkloadCommand(),
		},
	}
}
