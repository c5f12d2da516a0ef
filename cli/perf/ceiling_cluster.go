package perf

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// ceilingCluster is the canned cluster of `perf produce-ceiling --replicas`: one
// process per node, each a canned broker that stores, fsyncs and checks the CRC of the
// partitions it leads and follows the others' by fetching them, as Kafka followers do,
// with nothing else of a broker. Against it the producer meets the least that
// replication with acks=all costs on this machine: every byte received, checked,
// written and fsynced on each node, sent over loopback to each follower, and
// acknowledged once every node has fsynced it.
type ceilingCluster struct {
	nodes *floorNodes
	kafka []string // the nodes' Kafka addresses by node id
}

// startCeilingCluster starts replicas nodes holding partitions, their files in dir.
func startCeilingCluster(ctx context.Context, errOut io.Writer, dir string, replicas, partitions int) (*ceilingCluster, error) {
	cl := &ceilingCluster{nodes: &floorNodes{errOut: errOut, command: "ceiling-node"}}
	peers := []string{"peers"}
	for id := range replicas {
		line, err := cl.nodes.start(ctx, dir, "--node-id", strconv.Itoa(id), "--nodes", strconv.Itoa(replicas), "--partitions", strconv.Itoa(partitions))
		if err != nil {
			cl.stop()
			return nil, err
		}
		addrs := strings.Fields(line)
		if len(addrs) != 2 {
			cl.stop()
			return nil, fmt.Errorf("canned cluster node %d: %q", id, line)
		}
		cl.kafka = append(cl.kafka, addrs[0])
		peers = append(peers, addrs...)
	}
	line := strings.Join(peers, " ") + "\n"
	for _, in := range cl.nodes.stdins {
		if _, err := io.WriteString(in, line); err != nil {
			cl.stop()
			return nil, err
		}
	}
	return cl, nil
}

// bootstrap is the nodes' Kafka addresses, comma-separated.
func (cl *ceilingCluster) bootstrap() string { return strings.Join(cl.kafka, ",") }

// ceilingClusterStats are what the nodes of a canned cluster did.
type ceilingClusterStats struct {
	written, fsyncs int64         // over every node's files
	cpu             time.Duration // the nodes' user and system time
}

// stop ends the nodes and returns what they did; written and fsyncs are -1 if a node
// did not tell.
func (cl *ceilingCluster) stop() ceilingClusterStats {
	cl.nodes.stop()
	st := ceilingClusterStats{cpu: cl.nodes.cpu()}
	for _, out := range cl.nodes.outs {
		found := false
		for _, line := range out.lines { // read to the end: stop waited for done
			var w, f int64
			if _, err := fmt.Sscanf(line, "stats %d %d", &w, &f); err == nil {
				st.written, st.fsyncs, found = st.written+w, st.fsyncs+f, true
			}
		}
		if !found {
			return ceilingClusterStats{written: -1, fsyncs: -1, cpu: st.cpu}
		}
	}
	return st
}
