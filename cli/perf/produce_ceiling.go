package perf

import (
	"fmt"

	ucli "github.com/urfave/cli/v2"
)

// perfProduceCeilingCommand is `petrel perf produce-ceiling`: `perf produce`'s kgo
// producer against a broker that costs nothing (cannedBroker, in the same process,
// acknowledging every batch at once and storing nothing), so that its figures — above
// all the latency with one record in flight — are the client's own floor on this
// machine, to set beside `perf produce` against a real broker and `perf floor`.
func perfProduceCeilingCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "produce-ceiling",
		Usage: "produce to an in-process fake broker that acknowledges every batch at once: the kgo producer's own ceiling and latency floor",
		Description: "Starts a one-node fake broker on 127.0.0.1 in this process with one topic of one\n" +
			"partition, which answers every Produce at once and keeps nothing. Then produces as\n" +
			"`perf produce` does, with the same flags, and reports the same figures.\n" +
			"--bootstrap-server is not used.",
		Flags: perfProduceFlags(),
		Action: func(c *ucli.Context) error {
			if c.Args().Len() > 0 {
				return fmt.Errorf("perf produce-ceiling takes no arguments, got %d", c.Args().Len())
			}
			fake, err := startCannedBroker(ceilingTopic, 1, 0, 1, 1<<20)
			if err != nil {
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
