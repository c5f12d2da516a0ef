package perf

import (
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// Kafka's consumer defaults for the two fetch sizes (fetch.max.bytes and
// max.partition.fetch.bytes), which kgo shares.
const (
	defaultFetchMaxBytes          = 50 << 20
	defaultMaxPartitionFetchBytes = 1 << 20
	// maxFetchSizeFlag bounds both flags: a response frame above 1 GiB is refused by
	// clients anyway.
	maxFetchSizeFlag = 1 << 30
)

// fetchSizeFlags are the perf consumers' fetch sizes, named as Kafka's consumer
// properties.
func fetchSizeFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.IntFlag{Name: "fetch-max-bytes", Usage: "fetch.max.bytes: the most bytes one Fetch response may carry", Value: defaultFetchMaxBytes},
		&ucli.IntFlag{Name: "max-partition-fetch-bytes", Usage: "max.partition.fetch.bytes: the most bytes per partition in one Fetch response", Value: defaultMaxPartitionFetchBytes},
	}
}

// kgoFetchFlags are the kgo consumer's own fetch settings, for the perf consumers only
// (the raw fetcher keeps one fetch in flight per leader and Kafka's max wait).
func kgoFetchFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.IntFlag{Name: "max-concurrent-fetches", Usage: "kgo MaxConcurrentFetches: fetches buffered or in flight at once across brokers (0: kgo's default, one per broker; kgo never has two to one broker)"},
		&ucli.DurationFlag{Name: "fetch-max-wait", Usage: "fetch.max.wait.ms: how long the broker may hold a Fetch for fetch.min.bytes (0: kgo's default, 5s)"},
	}
}

// fetchSizes are the parsed fetch-size flags, and the kgo fetch settings where the
// command has them.
type fetchSizes struct {
	maxBytes             int32         // fetch.max.bytes
	maxPartitionBytes    int32         // max.partition.fetch.bytes
	maxConcurrentFetches int           // kgo MaxConcurrentFetches; 0: kgo's default
	maxWait              time.Duration // fetch.max.wait.ms; 0: kgo's default
}

func parseFetchSizes(c *ucli.Context) (fetchSizes, error) {
	total, part := c.Int("fetch-max-bytes"), c.Int("max-partition-fetch-bytes")
	if total <= 0 || total > maxFetchSizeFlag {
		return fetchSizes{}, fmt.Errorf("bad --fetch-max-bytes %d: want 1 to %d", total, maxFetchSizeFlag)
	}
	if part <= 0 || part > maxFetchSizeFlag {
		return fetchSizes{}, fmt.Errorf("bad --max-partition-fetch-bytes %d: want 1 to %d", part, maxFetchSizeFlag)
	}
	sizes := fetchSizes{maxBytes: int32(total), maxPartitionBytes: int32(part),
		maxConcurrentFetches: c.Int("max-concurrent-fetches"), maxWait: c.Duration("fetch-max-wait")}
	if sizes.maxConcurrentFetches < 0 {
		return fetchSizes{}, fmt.Errorf("bad --max-concurrent-fetches %d", sizes.maxConcurrentFetches)
	}
	if sizes.maxWait < 0 {
		return fetchSizes{}, fmt.Errorf("bad --fetch-max-wait %s", sizes.maxWait)
	}
	return sizes, nil
}

// kgoOptions sets the sizes on a kgo consumer. kgo refuses a fetch.max.bytes above
// its largest readable response (100 MiB by default), so that limit follows.
func (f fetchSizes) kgoOptions() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.FetchMaxBytes(f.maxBytes),
		kgo.FetchMaxPartitionBytes(f.maxPartitionBytes),
		kgo.BrokerMaxReadBytes(max(100<<20, f.maxBytes+(1<<20))),
	}
	if f.maxConcurrentFetches > 0 {
		opts = append(opts, kgo.MaxConcurrentFetches(f.maxConcurrentFetches))
	}
	if f.maxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(f.maxWait))
	}
	return opts
}

// parsePerfReaderArgs reads what both perf readers (consume, fetch) take: the topic,
// the record or time bound and the fetch sizes.
func parsePerfReaderArgs(c *ucli.Context) (topic string, bounds perfBounds, sizes fetchSizes, err error) {
	if topic, err = clientcmd.ExactlyOneArg(c, "TOPIC"); err != nil {
		return
	}
	if bounds, err = parsePerfBounds(c); err != nil {
		return
	}
	sizes, err = parseFetchSizes(c)
	return
}
