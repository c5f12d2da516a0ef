package perf

import (
	"fmt"

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
// beside.
func perfProduceCeilingCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "produce-ceiling",
		Usage: "produce to an in-process fake broker that acknowledges every batch at once: the kgo producer's own ceiling and latency floor",
		Description: "Starts a one-node fake broker on 127.0.0.1 in this process with one topic of\n" +
			"--partitions partitions, which answers every Produce at once and keeps nothing. Then\n" +
			"produces as `perf produce` does, with the same flags, and reports the same figures.\n" +
			"--bootstrap-server is not used.",
		Flags: append(perfProduceFlags(),
			&ucli.StringFlag{
				Name: "fsync-dir",
				Usage: "store every partition's batches in a file of its own in this directory and answer each Produce only after fsyncs covering it " +
					"(a flusher per file, group commit): the ceiling of the producer and the disk together, with a broker that costs nothing else",
			},
			cannedPartitionsFlag(),
		),
		Action: func(c *ucli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("perf produce-ceiling takes no arguments, got %d", c.Args().Len())
			}
			partitions, err := cannedPartitions(c)
			if err != nil {
				return err
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
