package cli

// `petrel cluster remove-broker`, `cordon` and `uncordon`: a broker leaving the
// cluster, and a broker kept from new replicas (docs/operations.md, "Decommissioning a
// broker" and "Cordoning a broker").

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"

	"github.com/petrel-broker/petrel/metadata"
)

// clusterMembershipCommands are the subcommands of `petrel cluster` that change its
// membership.
func clusterMembershipCommands() []*ucli.Command {
	return []*ucli.Command{
		{
			Name:      "remove-broker",
			Usage:     "decommission a stopped broker that holds no replicas: unregister it and remove it from the metadata quorum",
			ArgsUsage: "BROKER_ID",
			Description: "Sends UnregisterBroker (key 64) and, for a Raft voter, RemoveRaftVoter (key 81, KIP-853).\n" +
				"Refused while the broker runs or holds replicas: stop it and move its replicas with\n" +
				"`petrel reassign` first. A removed voter must also leave the --voters of every node.",
			Flags:  clientcmd.WithFlags(),
			Action: brokerAction(runRemoveBroker),
		},
		{
			Name:        "cordon",
			Usage:       "keep new replicas off a broker (cordoned.log.dirs=*, KIP-1066); its replicas stay",
			ArgsUsage:   "BROKER_ID",
			Description: "Sets the per-broker dynamic config cordoned.log.dirs to * with IncrementalAlterConfigs.",
			Flags:       clientcmd.WithFlags(),
			Action:      brokerAction(cordonAction(true)),
		},
		{
			Name:        "uncordon",
			Usage:       "let new replicas be placed on a cordoned broker again",
			ArgsUsage:   "BROKER_ID",
			Description: "Deletes the per-broker dynamic config cordoned.log.dirs.",
			Flags:       clientcmd.WithFlags(),
			Action:      brokerAction(cordonAction(false)),
		},
	}
}

// brokerCommand is a command on one broker: the BROKER_ID argument, a client, and the
// --timeout bound for the command's requests.
type brokerCommand func(c *ucli.Context, ctx context.Context, cl *clientcmd.Client, id int32) error

// brokerAction runs act with the BROKER_ID argument parsed and a client connected.
func brokerAction(act brokerCommand) ucli.ActionFunc {
	return func(c *ucli.Context) error {
		arg, err := clientcmd.ExactlyOneArg(c, "BROKER_ID")
		if err != nil {
			return err
		}
		id, err := strconv.ParseInt(arg, 10, 32)
		if err != nil || id < 0 {
			return fmt.Errorf("invalid broker id %q: a non-negative integer", arg)
		}
		cl, ctx, done, err := clientcmd.Connect(c)
		if err != nil {
			return err
		}
		defer done()
		return act(c, ctx, cl, int32(id))
	}
}

func runRemoveBroker(c *ucli.Context, ctx context.Context, cl *clientcmd.Client, id int32) error {
	voter := false
	if q := describeQuorum(ctx, cl); q != nil {
		for _, m := range q.Members {
			voter = voter || m.NodeID == id && m.Voter
		}
	}
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = id
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("remove broker %d: %w", id, cl.Explain(err))
	}
	err = kafkaError(kerr.ErrorForCode(resp.ErrorCode), derefString(resp.ErrorMessage))
	switch {
	case err == nil:
		fmt.Fprintf(c.App.Writer, "Broker %d unregistered.\n", id)
	case voter && errors.Is(err, kerr.BrokerIDNotRegistered):
		// Unregistered before: what remains is the quorum.
	default:
		return fmt.Errorf("remove broker %d: %w", id, err)
	}
	if !voter {
		return nil
	}
	vreq := kmsg.NewPtrRemoveRaftVoterRequest()
	vreq.VoterID = id
	vresp, err := vreq.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("remove voter %d: %w", id, cl.Explain(err))
	}
	if err := kafkaError(kerr.ErrorForCode(vresp.ErrorCode), derefString(vresp.ErrorMessage)); err != nil {
		return fmt.Errorf("remove voter %d: %w", id, err)
	}
	fmt.Fprintf(c.App.Writer, "Voter %d removed from the metadata quorum; take it out of every node's --voters.\n", id)
	return nil
}

// cordonAction sets (cordon) or deletes broker id's cordoned.log.dirs.
func cordonAction(cordon bool) brokerCommand {
	return func(c *ucli.Context, ctx context.Context, cl *clientcmd.Client, id int32) error {
		alter := kadm.AlterConfig{Op: kadm.DeleteConfig, Name: metadata.CordonedLogDirsConfig}
		if cordon {
			alter = kadm.AlterConfig{Op: kadm.SetConfig, Name: metadata.CordonedLogDirsConfig, Value: kadm.StringPtr("*")}
		}
		resps, err := cl.Admin().AlterBrokerConfigs(ctx, []kadm.AlterConfig{alter}, id)
		if err = firstAlterError(resps, err); err != nil {
			return fmt.Errorf("%s broker %d: %w", c.Command.Name, id, cl.Explain(err))
		}
		if cordon {
			fmt.Fprintf(c.App.Writer, "Broker %d cordoned: no new replicas are placed on it.\n", id)
		} else {
			fmt.Fprintf(c.App.Writer, "Broker %d uncordoned.\n", id)
		}
		return nil
	}
}
