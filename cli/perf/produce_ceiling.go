package perf

import (
	"context"
	"errors"
	"fmt"

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
		),
		Action: func(c *ucli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("perf produce-ceiling takes no arguments, got %d", c.Args().Len())
			}
			partitions, err := cannedPartitions(c)
			if err != nil {
				return err
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
	cl, err := startCeilingCluster(c.Context, clientcmd.LockErrWriter(c), c.String("fsync-dir"), replicas, partitions)
	if err != nil {
		return fmt.Errorf("perf produce-ceiling: %w", err)
	}
	defer cl.nodes.stop() // on the error paths; after cl.stop below, a no-op
	if err := c.Set("bootstrap-server", cl.bootstrap()); err != nil {
		return err
	}
	// A node that ends during the run (it failed, or was killed) ends the run: the
	// producer would otherwise retry against it until its timeouts.
	ctx, cancel := context.WithCancelCause(c.Context)
	defer cancel(nil)
	for i, out := range cl.nodes.outs {
		go func() {
			select {
			case <-out.done:
				cancel(fmt.Errorf("perf produce-ceiling: node %d of the canned cluster ended during the run", i))
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
	cancel(nil)
	st := cl.stop()
	if st.written < 0 {
		return errors.Join(runErr, errors.New("perf produce-ceiling: a node of the canned cluster did not report what it wrote"))
	}
	fmt.Fprintf(c.App.ErrWriter, "produce-ceiling: %d nodes, %d bytes written, %d fsyncs, %.0f KiB per fsync on average, %.3f CPU seconds in the nodes\n",
		replicas, st.written, st.fsyncs, float64(st.written)/float64(max(st.fsyncs, 1))/1024, st.cpu.Seconds())
	return runErr
}
