package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// clusterCommand is `petrel cluster`: what the cluster says about itself.
func clusterCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "cluster",
		Usage: "inspect the cluster",
		Subcommands: []*ucli.Command{
			{
				Name:   "describe",
				Usage:  "print the cluster id, the controller and the brokers",
				Flags:  clientFlags(),
				Action: runClusterDescribe,
			},
		},
	}
}

// clusterDescription is what `cluster describe` prints: only what the cluster reports.
//
// Room for later: the controller epoch and the Raft voters and observers (from
// DescribeQuorum, key 55) belong here once the broker serves them.
type clusterDescription struct {
	ClusterID    string
	ControllerID int32 // -1 when the cluster reports none
	Brokers      []brokerDescription
}

// brokerDescription is one live broker as the cluster reports it.
type brokerDescription struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   string // "" when the broker has none
}

func runClusterDescribe(c *ucli.Context) error {
	if _, err := commandArgs(c); err != nil {
		return err
	}
	cl, err := newKafkaClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := cl.requestContext(c.Context)
	defer cancel()
	d, err := describeCluster(ctx, cl)
	if err != nil {
		return fmt.Errorf("describe cluster: %w", cl.explain(err))
	}
	return writeClusterDescription(c.App.Writer, d)
}

// describeCluster asks with DescribeCluster (key 60) and falls back to Metadata when
// that fails for any reason but a timeout: brokers before Kafka 2.8 do not serve it,
// and kgo reports that with an unexported error.
func describeCluster(ctx context.Context, cl *kafkaClient) (clusterDescription, error) {
	req := kmsg.NewPtrDescribeClusterRequest()
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
		d.Brokers = append(d.Brokers, brokerDescription{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: derefString(b.Rack)})
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].NodeID < d.Brokers[j].NodeID })
	return d, nil
}

func describeClusterByMetadata(ctx context.Context, cl *kafkaClient) (clusterDescription, error) {
	m, err := cl.admin().BrokerMetadata(ctx)
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
	fmt.Fprintf(tw, "Brokers:\t%d\n", len(d.Brokers))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tHOST:PORT\tRACK")
	for _, b := range d.Brokers {
		rack := b.Rack
		if rack == "" {
			rack = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\n", b.NodeID, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), rack)
	}
	return tw.Flush()
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
