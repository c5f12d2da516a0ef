package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MaxRecords bounds the records one run produces: the history and its analysis are
// kept in memory, about 300 bytes a record at the peak.
const MaxRecords = 3_000_000

// Config is one workload run.
type Config struct {
	// ClientOpts are the base options of every client the run makes: seed brokers,
	// security, logger. Run adds the producer, consumer and group options.
	ClientOpts []kgo.Opt
	// Run names this run in every value it writes (a random id when empty); records of
	// other runs in the topic are ignored.
	Run string

	Topic             string
	Partitions        int32 // when the topic is created
	ReplicationFactor int16 // when the topic is created

	Producers int           // idempotent acks=all producers
	Keys      int           // distinct keys, spread over the producers' records
	Records   int64         // records to produce in all (0: until Duration)
	Duration  time.Duration // how long to produce (0: until Records)
	Rate      float64       // records per second over all producers (0: as fast as acknowledged)

	Transactions       bool    // produce in transactions
	AbortFraction      float64 // of transactions aborted on purpose
	TransactionRecords int     // records per transaction

	Consumers int    // consumers in Group
	Group     string // the consumer group (derived from Run when empty)

	// DeliveryTimeout bounds a record's delivery and a transaction's end.
	DeliveryTimeout time.Duration
	// DrainTimeout bounds the drain phase.
	DrainTimeout time.Duration

	// Faults are when Fault runs, in order; Fault is called with the fault's number
	// (1, 2, ...) and returns what to show of it. A fault still running when the
	// producers stop is waited for before the drain.
	Faults []FaultPoint
	Fault  func(ctx context.Context, n int) (output string, err error)

	// OnProgress is called about every ProgressInterval, and OnFault after each fault,
	// both from Run's goroutine.
	OnProgress       func(Progress)
	OnFault          func(FaultResult)
	ProgressInterval time.Duration
	// OnWarning is called, from Run's goroutine before the producers start, with each
	// warning about the topic (a configuration that could delete the run's records).
	OnWarning func(string)

	// Seed makes the producers' key choices and abort decisions repeatable (0: random).
	Seed   uint64
	Logger hclog.Logger
}

// FaultPoint is one moment of the run: a fraction of it (Fraction > 0) or a time after
// the producers started.
type FaultPoint struct {
	Fraction float64       // 0 < Fraction <= 1: of the run's progress
	After    time.Duration // when Fraction is 0
}

func (f FaultPoint) String() string {
	if f.Fraction > 0 {
		return strconv.FormatFloat(f.Fraction*100, 'f', -1, 64) + "%"
	}
	return f.After.String()
}

// ParseFaultPoints parses a comma-separated list of percentages of the run ("30%")
// and durations after its start ("10s").
func ParseFaultPoints(s string) ([]FaultPoint, error) {
	var points []FaultPoint
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if pct, ok := strings.CutSuffix(part, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || f <= 0 || f > 100 {
				return nil, fmt.Errorf("bad fault moment %q: want a percentage above 0%% and at most 100%%", part)
			}
			points = append(points, FaultPoint{Fraction: f / 100})
			continue
		}
		d, err := time.ParseDuration(part)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bad fault moment %q: want a percentage of the run (30%%) or a duration (10s)", part)
		}
		points = append(points, FaultPoint{After: d})
	}
	if len(points) == 0 {
		return nil, errors.New("no fault moment given")
	}
	return points, nil
}

// Validate checks c and fills in defaults.
func (c *Config) Validate() error {
	switch {
	case c.Topic == "":
		return errors.New("no topic")
	case c.Producers < 1 || c.Producers > 1000:
		return fmt.Errorf("producers %d: want 1 to 1000", c.Producers)
	case c.Keys < 1 || c.Keys > 1_000_000:
		return fmt.Errorf("keys %d: want 1 to 1000000", c.Keys)
	case c.Consumers < 0 || c.Consumers > 1000:
		return fmt.Errorf("consumers %d: want 0 to 1000", c.Consumers)
	case c.Records < 0 || c.Records > MaxRecords:
		return fmt.Errorf("records %d: want 0 to %d", c.Records, MaxRecords)
	case c.Duration < 0:
		return fmt.Errorf("duration %s is negative", c.Duration)
	case c.Records == 0 && c.Duration == 0:
		return errors.New("give a number of records, a duration or both")
	case c.Rate < 0:
		return fmt.Errorf("rate %g is negative", c.Rate)
	case c.AbortFraction < 0 || c.AbortFraction > 1:
		return fmt.Errorf("abort fraction %g: want 0 to 1", c.AbortFraction)
	case c.Transactions && (c.TransactionRecords < 1 || c.TransactionRecords > 100_000):
		return fmt.Errorf("records per transaction %d: want 1 to 100000", c.TransactionRecords)
	case c.Partitions < 1 && c.Partitions != -1:
		return fmt.Errorf("partitions %d: want at least 1 (or -1: the broker's default)", c.Partitions)
	case c.ReplicationFactor < 1 && c.ReplicationFactor != -1:
		return fmt.Errorf("replication factor %d: want at least 1 (or -1: the broker's default)", c.ReplicationFactor)
	case len(c.Faults) > 0 && c.Fault == nil:
		return errors.New("fault moments without a fault to run")
	}
	if c.Duration > 0 {
		for _, f := range c.Faults {
			if f.Fraction == 0 && f.After > c.Duration {
				return fmt.Errorf("fault moment %s is after the run's end (%s)", f, c.Duration)
			}
		}
	}
	if c.Run == "" {
		c.Run = newRunID()
	}
	if c.Group == "" {
		c.Group = "petrel-verify-" + c.Run
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = 30 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = time.Minute
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = 200 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return nil
}
