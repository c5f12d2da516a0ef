package perf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

// perfProduceCeilingCommand is `petrel perf produce-ceiling`: `perf produce`'s kgo
// producer against a broker that costs nothing (cannedBroker, in the same process,
// acknowledging every batch at once and storing nothing), so that its figures — above
// all the latency with one record in flight — are the client's own floor on this
// machine, to set beside `perf produce` against a real broker and `perf floor`. With
// --fsync-dir it stores the batches and answers after fsyncs covering them (syncStore,
// a file per partition): the ceiling of the same producer against a broker whose only
// cost is the disk. --partitions gives the topic the partitions of the run it is set
// beside. With --replicas N as well it is a cluster of N such brokers, each a process of
// its own, replicating by fetch (ceilingCluster): the ceiling of the producer, the disk
// and replication together, to set beside a Petrel cluster of N nodes.
func perfProduceCeilingCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "produce-ceiling",
		Usage: "produce to a fake broker that acknowledges every batch at once: the kgo producer's own ceiling and latency floor",
		Description: "Starts a one-node fake broker on 127.0.0.1 in this process with one topic of\n" +
			"--partitions partitions, which answers every Produce at once and keeps nothing. Then\n" +
			"produces as `perf produce` does, with the same flags, and reports the same figures.\n" +
			"With --fsync-dir the broker stores every batch and answers after an fsync covering it;\n" +
			"with --replicas N as well, N fake brokers run as processes of their own and replicate\n" +
			"each other's partitions by fetch, answering once every node has fsynced the batch.\n" +
			"With --floor the producer writes one record at a time to `perf floor`'s processes.\n" +
			"--bootstrap-server is not used.",
		Flags: append(perfProduceFlags(),
			&ucli.StringFlag{
				Name: "fsync-dir",
				Usage: "store every partition's batches in a file of its own in this directory and answer each Produce only after fsyncs covering it " +
					"(a flusher per file, group commit): the ceiling of the producer and the disk together, with a broker that costs nothing else",
			},
			cannedPartitionsFlag(),
			&ucli.IntFlag{
				Name: "replicas",
				Usage: "with --fsync-dir: a cluster of this many canned brokers, a process each, node p % replicas leading partition p and the others " +
					"fetching it, checking each batch's CRC, writing and fsyncing it before their next fetch, which acknowledges it: " +
					"the ceiling of the producer, the disk and replication together",
				Value: 1,
			},
			&ucli.BoolFlag{
				Name: "floor",
				Usage: "produce to `perf floor`'s processes instead: a leader that answers the producer's Produce once each of --replicas - 1 follower " +
					"processes has fetched the record, with the broker's message pattern and none of its work (with --fsync-dir, each fsyncing where the " +
					"broker does): the latency floor of one record in flight (--max-buffered-records 1) with this Kafka client",
			},
		),
		Action: func(c *ucli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("perf produce-ceiling takes no arguments, got %d", c.Args().Len())
			}
			partitions, err := cannedPartitions(c)
			if err != nil {
				return err
			}
			if c.Bool("floor") {
				return produceToFloor(c, partitions)
			}
			if replicas := c.Int("replicas"); replicas != 1 {
				if replicas < 2 || replicas > 16 || c.String("fsync-dir") == "" {
					return fmt.Errorf("bad --replicas %d: want 1 to 16, and --fsync-dir with more than 1", replicas)
				}
				return produceToCeilingCluster(c, replicas, partitions)
			}
			var sync *syncStore
			if dir := c.String("fsync-dir"); dir != "" {
				if sync, err = openSyncStore(dir, partitions); err != nil {
					return fmt.Errorf("perf produce-ceiling: %w", err)
				}
				defer func() {
					written, fsyncs := sync.stats()
					fmt.Fprintf(c.App.ErrWriter, "produce-ceiling: %d fsyncs of %d files, %.0f KiB per fsync on average\n",
						fsyncs, sync.files(), float64(written)/float64(max(fsyncs, 1))/1024)
				}()
			}
			fake, err := startCannedBroker(ceilingTopic, partitions, 0, 1, 1<<20, sync)
			if err != nil {
				if sync != nil {
					sync.close()
				}
				return err
			}
			defer fake.close()
			if err := c.Set("bootstrap-server", fake.addr()); err != nil {
				return err
			}
			return perfProduceTo(c, ceilingTopic)
		},
	}
}

// produceToCeilingCluster runs the producer against a canned cluster of replicas
// nodes (ceilingCluster) and reports, besides the producer's figures, what the nodes
// wrote and fsynced and the CPU they used.
func produceToCeilingCluster(c *ucli.Context, replicas, partitions int) error {
	// An interrupt while the nodes start ends the start, and the deferred stop cleans up
	// (perfProduceTo takes interrupts over for the run).
	startCtx, stopSignals := clientcmd.SignalContext(c.Context)
	defer stopSignals()
	cl, err := startCeilingCluster(startCtx, clientcmd.LockErrWriter(c), c.String("fsync-dir"), replicas, partitions)
	if err != nil {
		return fmt.Errorf("perf produce-ceiling: %w", err)
	}
	defer cl.nodes.stop() // on the error paths; after cl.stop below, a no-op
	if err := c.Set("bootstrap-server", cl.bootstrap()); err != nil {
		return err
	}
	runErr := produceWhileNodesRun(c, cl.nodes, "the canned cluster")
	st := cl.stop()
	if st.written < 0 {
		return errors.Join(runErr, errors.New("perf produce-ceiling: a node of the canned cluster did not report what it wrote"))
	}
	fmt.Fprintf(c.App.ErrWriter, "produce-ceiling: %d nodes, %d bytes written, %d fsyncs, %.0f KiB per fsync on average, %.3f CPU seconds in the nodes\n",
		replicas, st.written, st.fsyncs, float64(st.written)/float64(max(st.fsyncs, 1))/1024, st.cpu.Seconds())
	return runErr
}

// produceToFloor runs the producer, one record in flight, against `perf floor`'s
// processes: a leader with --kafka, which answers the producer in Kafka, and
// --replicas - 1 followers. Its latency is the floor of `perf floor` with this Kafka
// client in place of the floor's own.
func produceToFloor(c *ucli.Context, partitions int) error {
	replicas := c.Int("replicas")
	switch {
	case replicas < 1 || replicas > 16:
		return fmt.Errorf("bad --replicas %d: want 1 to 16", replicas)
	case partitions != 1 || c.Int("max-buffered-records") != 1 || (c.String("acks") != "all" && c.String("acks") != "-1"):
		return errors.New("perf produce-ceiling --floor takes one record in flight: --partitions 1, --max-buffered-records 1 and --acks all")
	}
	dir := ""
	if d := c.String("fsync-dir"); d != "" {
		var err error
		if dir, err = os.MkdirTemp(d, "petrel-floor-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	nodes := &floorNodes{errOut: clientcmd.LockErrWriter(c)}
	defer nodes.stop()
	// An interrupt while the nodes start ends the start, and the deferred stop and
	// removal clean up (perfProduceTo takes interrupts over for the run).
	startCtx, stopSignals := clientcmd.SignalContext(c.Context)
	defer stopSignals()
	addrs, err := nodes.start(startCtx, dir, "--followers", strconv.Itoa(replicas-1), "--kafka")
	if err != nil {
		return fmt.Errorf("perf produce-ceiling: %w", err)
	}
	floorAddr, kafkaAddr, ok := strings.Cut(addrs, " ")
	if !ok {
		return fmt.Errorf("perf produce-ceiling: the floor leader listens on %q, without a Kafka listener", addrs)
	}
	for range replicas - 1 {
		if _, err := nodes.start(startCtx, dir, "--leader", floorAddr); err != nil {
			return fmt.Errorf("perf produce-ceiling: %w", err)
		}
	}
	if err := c.Set("bootstrap-server", kafkaAddr); err != nil {
		return err
	}
	return produceWhileNodesRun(c, nodes, "the floor")
}

// produceWhileNodesRun runs the producer against nodes, of what (for errors). A node
// that ends during the run (it failed, or was killed) ends the run: the producer would
// otherwise retry against it until its timeouts.
func produceWhileNodesRun(c *ucli.Context, nodes *floorNodes, what string) error {
	ctx, cancel := context.WithCancelCause(c.Context)
	defer cancel(nil)
	for i, out := range nodes.outs {
		go func() {
			select {
			case <-out.done:
				cancel(fmt.Errorf("perf produce-ceiling: node %d of %s ended during the run", i, what))
			case <-ctx.Done():
			}
		}()
	}
	parent := c.Context
	c.Context = ctx
	runErr := perfProduceTo(c, ceilingTopic)
	c.Context = parent
	if cause := context.Cause(ctx); cause != nil && parent.Err() == nil {
		runErr = errors.Join(runErr, cause) // a node ended it
	}
	return runErr
}
