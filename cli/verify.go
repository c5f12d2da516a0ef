package cli

// `petrel verify`: consistency checks an operator runs on demand (docs/verify.md). This
// file holds only the parent command and its subcommands' registration, each
// subcommand in files of its own (verify_replicas*.go, verify_workload.go).

import ucli "github.com/urfave/cli/v2"

// verifyCommand is `petrel verify`.
func verifyCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "verify",
		Usage: "check a cluster's consistency: replicas' digests, a Jepsen-style workload (docs/verify.md)",
		Subcommands: []*ucli.Command{
			verifyReplicasCommand(),
			verifyWorkloadCommand(),
		},
	}
}
