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
// --fsync-dir it stores the batches and answers after an fsync covering them (syncLog):
// the ceiling of the same producer against a broker whose only cost is the disk.
func perfProduceCeilingCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "produce-ceiling",
		Usage: "produce to an in-process fake broker that acknowledges every batch at once: the kgo producer's own ceiling and latency floor",
		Description: "Starts a one-node fake broker on 127.0.0.1 in this process with one topic of one\n" +
			"partition, which answers every Produce at once and keeps nothing. Then produces as\n" +
			"`perf produce` does, with the same flags, and reports the same figures.\n" +
			"--bootstrap-server is not used.",
		Flags: append(perfProduceFlags(), &ucli.StringFlag{
			Name: "fsync-dir",
			Usage: "store every batch in a file in this directory and answer each Produce only after an fsync covering it " +
				"(one flusher, group commit): the ceiling of the producer and the disk together, with a broker that costs nothing else",
		}),
		Action: func(c *ucli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("perf produce-ceiling takes no arguments, got %d", c.Args().Len())
			}
			var sync *syncLog
			if dir := c.String("fsync-dir"); dir != "" {
				var err error
				if sync, err = openSyncLog(dir); err != nil {
					return fmt.Errorf("perf produce-ceiling: %w", err)
				}
				defer func() {
					written, fsyncs := sync.stats()
					fmt.Fprintf(c.App.ErrWriter, "produce-ceiling: %d fsyncs, %.0f KiB per fsync on average\n", fsyncs, float64(written)/float64(max(fsyncs, 1))/1024)
				}()
			}
			fake, err := startCannedBroker(ceilingTopic, 1, 0, 1, 1<<20, sync)
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
