package perf

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	ucli "github.com/urfave/cli/v2"
)

// perfCeilingNodeCommand is one node of the canned cluster of `petrel perf
// produce-ceiling --replicas`, which starts it. It prints "listening KAFKA REPLICATION"
// (its two addresses), then reads one line from standard input, "peers" and every
// node's two addresses in node id order, before it serves; it ends when its standard
// input closes, printing "stats BYTES FSYNCS" (all its files) last.
func perfCeilingNodeCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "ceiling-node",
		Usage:  "one node of `petrel perf produce-ceiling --replicas` (started by it)",
		Hidden: true,
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "node-id", Usage: "this node's id, 0 to nodes-1"},
			&ucli.IntFlag{Name: "nodes", Usage: "nodes in the cluster, each holding every partition"},
			&ucli.IntFlag{Name: "partitions", Usage: "partitions of the canned topic; node p % nodes leads partition p"},
			&ucli.StringFlag{Name: "fsync-dir", Usage: "directory for the partitions' files"},
		},
		Action: runCeilingNode,
	}
}

// runCeilingNode runs one node of a canned cluster until its standard input closes:
// its canned broker for the producer, its replication listener for the other nodes'
// followers, and a follower of each other node.
func runCeilingNode(c *ucli.Context) error {
	ignoreStopSignals() // the parent ends the node, and cleans up, by closing its input
	self, nodes, partitions := int32(c.Int("node-id")), int32(c.Int("nodes")), c.Int("partitions")
	if nodes < 2 || nodes > 16 || self < 0 || self >= nodes || partitions < 1 || partitions > 10000 {
		return fmt.Errorf("bad --node-id %d, --nodes %d or --partitions %d", self, nodes, partitions)
	}
	dir := c.String("fsync-dir")
	st, err := openReplicatedStore(dir, partitions, self, nodes)
	if err != nil {
		return err
	}
	b, err := newCannedBroker(ceilingTopic, partitions, 0, 1, 1<<20, st)
	if err != nil {
		st.close()
		return err
	}
	var closers closerSet
	defer closers.closeAll()
	repl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.close()
		return err
	}
	closers.add(repl)
	fmt.Fprintf(c.App.Writer, "listening %s %s\n", b.addr(), repl.Addr())

	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		b.close()
		return fmt.Errorf("reading the peers: %w", err)
	}
	kafka, replication, err := parseCeilingPeers(line, int(nodes))
	if err != nil {
		b.close()
		return err
	}
	b.cluster = &cannedCluster{addrs: kafka}
	b.start()

	stats := &replicaStats{}
	var following sync.WaitGroup
	errs := make(chan error, 2*nodes)
	go func() { // the parent closes standard input to end the run
		_, _ = io.Copy(io.Discard, in)
		errs <- nil
	}()
	go func() {
		for {
			conn, err := repl.Accept()
			if err != nil {
				errs <- err
				return
			}
			closers.add(conn)
			go func() { errs <- st.serveFollower(conn, self, nodes) }()
		}
	}()
	for leader := range nodes {
		if leader == self {
			continue
		}
		conn, err := net.Dial("tcp", replication[leader])
		if err != nil {
			b.close()
			return err
		}
		closers.add(conn)
		var parts []int32
		for p := leader; p < int32(partitions); p += nodes {
			parts = append(parts, p)
		}
		following.Go(func() { errs <- follow(conn, self, parts, dir, stats) })
	}
	runErr := <-errs // the end of standard input, or the first failure
	closers.closeAll()
	following.Wait() // each removes its files
	b.close()
	written, fsyncs := st.stats()
	fmt.Fprintf(c.App.Writer, "stats %d %d\n", written+stats.written.Load(), fsyncs+stats.fsyncs.Load())
	return quietEOF(runErr)
}

// parseCeilingPeers reads the "peers" line: nodes pairs of Kafka and replication
// addresses.
func parseCeilingPeers(line string, nodes int) (kafka, replication []string, err error) {
	fields := strings.Fields(line)
	if len(fields) != 1+2*nodes || fields[0] != "peers" {
		return nil, nil, fmt.Errorf("bad peers line %q", line)
	}
	for i := range nodes {
		kafka, replication = append(kafka, fields[1+2*i]), append(replication, fields[2+2*i])
	}
	return kafka, replication, nil
}
