package perf

import (
	"fmt"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

// ceilingTopic is the one topic of the ceilings' canned broker (`perf consume-ceiling`,
// `perf produce-ceiling`).
const ceilingTopic = "canned"

// cannedPartitionsFlag is the ceilings' --partitions: how many partitions ceilingTopic
// has.
func cannedPartitionsFlag() *ucli.IntFlag {
	return &ucli.IntFlag{Name: "partitions", Usage: "partitions of the canned topic (as many as the run it is set beside)", Value: 1}
}

// cannedPartitions reads cannedPartitionsFlag: 1 to 10,000.
func cannedPartitions(c *ucli.Context) (int, error) {
	partitions := c.Int("partitions")
	if partitions < 1 || partitions > 10000 {
		return 0, fmt.Errorf("bad --partitions %d: want 1 to 10000", partitions)
	}
	return partitions, nil
}

// perfCeilingCommand is `petrel perf consume-ceiling`: `perf consume`'s kgo consumer
// against a broker that costs nothing (cannedBroker, in the same process), so that
// its figure is the client's own ceiling on this machine, to set beside `perf
// consume` against a real broker.
func perfCeilingCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "consume-ceiling",
		Usage: "consume from an in-process fake broker that answers every Fetch from canned record batches in memory: the kgo consumer's own ceiling",
		Description: "Starts a one-node fake broker on 127.0.0.1 in this process whose one topic has\n" +
			"--partitions partitions; every Fetch is answered from batches encoded once\n" +
			"(--batch-records records of --record-size bytes), as many per partition as fit\n" +
			"in --max-partition-fetch-bytes. Then consumes as `perf consume` does and\n" +
			"reports the same figures. --bootstrap-server is not used.",
		Flags: clientcmd.WithFlags(append([]ucli.Flag{
			&ucli.IntFlag{Name: "records", Usage: "how many records to consume (0: until --duration)"},
			&ucli.DurationFlag{Name: "duration", Usage: "stop consuming after this long (0: no limit)"},
			cannedPartitionsFlag(),
			&ucli.IntFlag{Name: "record-size", Usage: "value size in bytes", Value: 1024},
			&ucli.IntFlag{Name: "batch-records", Usage: "records per canned batch", Value: 250},
			&ucli.BoolFlag{Name: "json", Usage: "print the final figures as JSON"},
		}, append(fetchSizeFlags(), kgoFetchFlags()...)...)...),
		Action: runPerfCeiling,
	}
}

func runPerfCeiling(c *ucli.Context) error {
	bounds, err := parsePerfBounds(c)
	if err != nil {
		return err
	}
	sizes, err := parseFetchSizes(c)
	if err != nil {
		return err
	}
	partitions, err := cannedPartitions(c)
	if err != nil {
		return err
	}
	size, batch := c.Int("record-size"), c.Int("batch-records")
	switch {
	case size < 0 || size > 1<<20:
		return fmt.Errorf("bad --record-size %d: want 0 to %d", size, 1<<20)
	case batch < 1 || batch*(size+32) > 64<<20:
		return fmt.Errorf("bad --batch-records %d: want at least 1 and batches under 64 MiB", batch)
	}
	fake, err := startCannedBroker(ceilingTopic, partitions, size, batch, int(sizes.maxPartitionBytes), nil)
	if err != nil {
		return err
	}
	defer fake.close()
	if err := c.Set("bootstrap-server", fake.addr()); err != nil {
		return err
	}
	// The canned broker serves this one topic: nothing to check.
	return perfConsumeFrom(c, ceilingTopic, bounds, sizes, false)
}
