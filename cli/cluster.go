package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// clusterCommand is `petrel cluster`: what the cluster says about itself.
func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster, decommission and cordon brokers",
		Subcommands: append([]*ucli.Command{
			{
				Name:    "describe",
				Aliases: []string{"info"},
				Usage:   "print the cluster id, the controller, the metadata quorum and the brokers",
				Flags:   withOutputFlags(),
				Action:  runClusterDescribe,
			},
		}, clusterMembershipCommands()...),
	}
}

// clusterDescription is what `cluster describe` prints: only what the cluster reports.
// The JSON names are `cluster describe -o json`'s.
type clusterDescription struct {
	ClusterID    string              `json:"cluster_id"`
	ControllerID int32               `json:"controller_id"` // -1 when the cluster reports none
	Brokers      []brokerDescription `json:"brokers"`
	// Quorum is the metadata quorum (DescribeQuorum, key 55); nil when the cluster does
	// not describe it (Kafka with ZooKeeper).
	Quorum *quorumDescription `json:"quorum"`
}

// brokerDescription is one broker as the cluster reports it.
type brokerDescription struct {
	NodeID int32  `json:"id"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
	Rack   string `json:"rack"` // "" when the broker has none
	Fenced bool   `json:"fenced"`
}

// quorumDescription is the metadata quorum: the controller is its leader.
type quorumDescription struct {
	LeaderID      int32          `json:"leader_id"`
	Epoch         int32          `json:"epoch"`          // controller epoch (the Raft term in Petrel)
	HighWatermark int64          `json:"high_watermark"` // committed metadata offset
	Members       []quorumMember `json:"members"`
}

// quorumMember is a voter or a non-voter (observer) of the metadata quorum.
type quorumMember struct {
	NodeID       int32 `json:"id"`
	Voter        bool  `json:"voter"`
	LogEndOffset int64 `json:"log_end_offset"` // the member's metadata offset; -1 when unknown
}

func runClusterDescribe(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	d, err := describeCluster(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster: %w", cl.Explain(err))
	}
	if asJSON {
		if d.Brokers == nil {
			d.Brokers = []brokerDescription{}
		}
		return writeJSON(c.App.Writer, d)
	}
	return writeClusterDescription(c.App.Writer, d)
}

// describeCluster asks with DescribeCluster (key 60) and falls back to Metadata when
// that fails for any reason but a timeout: brokers before Kafka 2.8 do not serve it,
// and kgo reports that with an unexported error.
func describeCluster(ctx context.Context, cl *clientcmd.Client) (clusterDescription, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
	req.IncludeFencedBrokers = true // v2+; older brokers list only active brokers
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		if ctx.Err() != nil {
			return clusterDescription{}, err
		}
		return describeClusterByMetadata(ctx, cl)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return clusterDescription{}, kafkaError(err, msg)
	}
	d := clusterDescription{ClusterID: resp.ClusterID, ControllerID: resp.ControllerID}
	for _, b := range resp.Brokers {
		d.Brokers = append(d.Brokers, brokerDescription{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: derefString(b.Rack), Fenced: b.IsFenced})
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].NodeID < d.Brokers[j].NodeID })
	d.Quorum = describeQuorum(ctx, cl)
	return d, nil
}

// describeQuorum asks for the metadata quorum; it returns nil when the cluster does not
// answer it (a ZooKeeper-era Kafka, for one).
func describeQuorum(ctx context.Context, cl *clientcmd.Client) *quorumDescription {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return nil
	}
	q := &quorumDescription{LeaderID: p.LeaderID, Epoch: p.LeaderEpoch, HighWatermark: p.HighWatermark}
	for _, v := range p.CurrentVoters {
		q.Members = append(q.Members, quorumMember{NodeID: v.ReplicaID, Voter: true, LogEndOffset: v.LogEndOffset})
	}
	for _, o := range p.Observers {
		q.Members = append(q.Members, quorumMember{NodeID: o.ReplicaID, LogEndOffset: o.LogEndOffset})
	}
	sort.Slice(q.Members, func(i, j int) bool { return q.Members[i].NodeID < q.Members[j].NodeID })
	return q
}

func describeClusterByMetadata(ctx context.Context, cl *clientcmd.Client) (clusterDescription, error) {
	m, err := cl.Admin().BrokerMetadata(ctx)
	if err != nil {
		return clusterDescription{}, err
	}
	d := clusterDescription{ClusterID: m.Cluster, ControllerID: m.Controller}
	for _, b := range m.Brokers {
		d.Brokers = append(d.Brokers, brokerDescription{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: derefString(b.Rack)})
	}
	return d, nil
}

// writeClusterDescription prints the summary lines and an aligned broker table.
func writeClusterDescription(w io.Writer, d clusterDescription) error {
	controller := "none"
	if d.ControllerID >= 0 {
		controller = strconv.Itoa(int(d.ControllerID))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Cluster ID:\t%s\n", d.ClusterID)
	fmt.Fprintf(tw, "Controller ID:\t%s\n", controller)
	if d.Quorum != nil {
		fmt.Fprintf(tw, "Controller epoch:\t%d\n", d.Quorum.Epoch)
		fmt.Fprintf(tw, "Metadata offset:\t%d\n", d.Quorum.HighWatermark)
	}
	fmt.Fprintf(tw, "Brokers:\t%d\n", len(d.Brokers))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOST:PORT\tRACK\tSTATE")
	for _, b := range d.Brokers {
		rack := b.Rack
		if rack == "" {
			rack = "-"
		}
		state := "active"
		if b.Fenced {
			state = "fenced"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack, state)
	}
	if err := tw.Flush(); err != nil || d.Quorum == nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RAFT ID\tROLE\tMETADATA OFFSET\tLAG")
	for _, m := range d.Quorum.Members {
		role := "non-voter"
		switch {
		case m.NodeID == d.Quorum.LeaderID:
			role = "leader (controller)"
		case m.Voter:
			role = "voter"
		}
		offset, lag := "-", "-"
		if m.LogEndOffset >= 0 {
			offset = strconv.FormatInt(m.LogEndOffset, 10)
			lag = strconv.FormatInt(max(d.Quorum.HighWatermark-m.LogEndOffset, 0), 10)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", m.NodeID, role, offset, lag)
	}
	return tw.Flush()
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
