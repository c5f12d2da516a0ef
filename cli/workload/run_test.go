package workload

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clitest"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runOn runs a small workload against addr with fault as the hook at 50%, and returns
// the report, failing the test if the run could not start.
func runOn(t *testing.T, addr string, mutate func(*Config)) *Report {
	t.Helper()
	cfg := Config{
		ClientOpts:        []kgo.Opt{kgo.SeedBrokers(addr)},
		Topic:             "verify-" + newRunID(),
		Partitions:        3,
		ReplicationFactor: 1,
		Producers:         2,
		Keys:              10,
		Records:           600,
		Rate:              400, // 1.5 s: the fault at 50% comes before the end
		Duration:          60 * time.Second,
		Consumers:         2,
		DeliveryTimeout:   20 * time.Second,
		DrainTimeout:      30 * time.Second,
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := report.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", out.String())
	return report
}

// wantOnly fails t unless the report's violations are exactly those of kinds.
func wantOnly(t *testing.T, r *Report, kinds ...Kind) {
	t.Helper()
	for _, k := range Kinds() {
		want := false
		for _, w := range kinds {
			want = want || w == k
		}
		if got := r.Counts[k] > 0; got != want {
			t.Errorf("%s: %d violations (%q), want some: %v", k, r.Counts[k], r.Examples[k], want)
		}
	}
}

func TestRunHealthy(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	r := runOn(t, b.Addr().String(), nil)
	wantOnly(t, r)
	if r.Produced != 600 || r.Acknowledged != 600 || r.Read != 600 {
		t.Errorf("produced %d, acknowledged %d, read %d: want 600 each", r.Produced, r.Acknowledged, r.Read)
	}
	if r.Commits == 0 || r.GroupRead == 0 {
		t.Errorf("the group read %d records and committed %d times", r.GroupRead, r.Commits)
	}
}

func TestRunTransactions(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	r := runOn(t, b.Addr().String(), func(c *Config) {
		c.Transactions, c.AbortFraction, c.TransactionRecords = true, 0.3, 10
		c.Seed = 7 // three in ten transactions aborted, about
	})
	wantOnly(t, r)
	if r.Aborted == 0 || r.Acknowledged == 0 || r.Acknowledged+r.Aborted != r.Produced {
		t.Errorf("produced %d: acknowledged %d, aborted %d", r.Produced, r.Acknowledged, r.Aborted)
	}
	if r.Read != r.Acknowledged {
		t.Errorf("read %d, want the %d committed", r.Read, r.Acknowledged)
	}
}

// TestRunFindsPlantedLoss deletes a partition's records behind the checker's back
// (DeleteRecords to the high watermark) in the middle of the run: the acknowledged
// records there are reported lost and nothing else.
func TestRunFindsPlantedLoss(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	addr := b.Addr().String()
	var topic string
	r := runOn(t, addr, func(c *Config) {
		topic = c.Topic
		c.Consumers = 0 // deleted records move the group's offsets: not this test's point
		c.Faults = []FaultPoint{{Fraction: 0.5}}
		c.Fault = func(ctx context.Context, n int) (string, error) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
			if err != nil {
				return "", err
			}
			defer cl.Close()
			adm := kadm.NewClient(cl)
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				return "", err
			}
			end, _ := ends.Lookup(topic, 0)
			resp, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: end.Offset}}})
			if err == nil {
				err = resp.Error()
			}
			return fmt.Sprintf("deleted partition 0 below offset %d", end.Offset), err
		}
	})
	if len(r.Faults) != 1 || r.Faults[0].Err != nil {
		t.Fatalf("faults %+v", r.Faults)
	}
	wantOnly(t, r, Lost)
}

// TestRunFindsPlantedDuplicate re-produces one of the run's records with a plain
// (non-idempotent) producer, value and key unchanged: the checker reports it duplicated.
func TestRunFindsPlantedDuplicate(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	addr := b.Addr().String()
	var topic string
	r := runOn(t, addr, func(c *Config) {
		topic = c.Topic
		c.Faults = []FaultPoint{{Fraction: 0.5}}
		c.Fault = func(ctx context.Context, n int) (string, error) {
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()),
				kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			if err != nil {
				return "", err
			}
			defer cl.Close()
			for ctx.Err() == nil {
				fetches := cl.PollRecords(ctx, 1)
				if err := fetches.Err0(); err != nil {
					return "", err
				}
				for _, rec := range fetches.Records() {
					again := &kgo.Record{Topic: topic, Key: rec.Key, Value: rec.Value}
					if err := cl.ProduceSync(ctx, again).FirstErr(); err != nil {
						return "", err
					}
					return fmt.Sprintf("re-produced %q", rec.Value), nil
				}
			}
			return "", ctx.Err()
		}
	})
	if len(r.Faults) != 1 || r.Faults[0].Err != nil {
		t.Fatalf("faults %+v", r.Faults)
	}
	wantOnly(t, r, Duplicated)
	if r.Counts[Duplicated] != 1 {
		t.Errorf("%d duplicated, want 1", r.Counts[Duplicated])
	}
}

// TestRunInterrupted cancels the run in the middle: it still drains and reports on
// what it produced.
func TestRunInterrupted(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{
		ClientOpts: []kgo.Opt{kgo.SeedBrokers(b.Addr().String())},
		Topic:      "verify-interrupted", Partitions: 1, ReplicationFactor: 1,
		Producers: 1, Keys: 3, Duration: time.Minute, Rate: 200, Consumers: 1,
		Faults: []FaultPoint{{After: 500 * time.Millisecond}},
		Fault: func(context.Context, int) (string, error) {
			cancel() // ^C
			return "", nil
		},
	}
	start := time.Now()
	r, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || time.Since(start) > 40*time.Second {
		t.Fatalf("interrupted %v after %s", r.Interrupted, time.Since(start))
	}
	wantOnly(t, r)
	if r.Produced == 0 || r.Read != r.Acknowledged {
		t.Errorf("produced %d, acknowledged %d, read %d", r.Produced, r.Acknowledged, r.Read)
	}
}

// A group with committed offsets for the topic would start past its earliest offset
// (and an old group on a recreated topic would look like a commit going backwards):
// the run refuses it before producing anything.
func TestRunRefusesAGroupWithCommittedOffsets(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	addr := b.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "reused"); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.CommitOffsets(ctx, "old-group", kadm.Offsets{"reused": {0: {Topic: "reused", Partition: 0, At: 0}}})
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(ctx, Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(addr)}, Topic: "reused", Partitions: 1,
		ReplicationFactor: 1, Producers: 1, Keys: 1, Records: 10, Consumers: 1, Group: "old-group"})
	if err == nil || !strings.Contains(err.Error(), `group "old-group" already has committed offsets for topic "reused"`) {
		t.Fatalf("Run: %v, want a refusal of the group", err)
	}
}

// An existing topic that compacts or has a size retention can delete the run's
// records: the run warns before producing.
func TestRunWarnsOfATopicThatDeletes(t *testing.T) {
	b := clitest.StartBroker(t, nil)
	addr := b.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	compact, bytes := "compact", "100000000"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": &compact, "retention.bytes": &bytes}, "deleting"); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	r, err := Run(ctx, Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(addr)}, Topic: "deleting", Partitions: 1,
		ReplicationFactor: 1, Producers: 1, Keys: 1, Records: 10, DrainTimeout: 20 * time.Second,
		OnWarning: func(w string) { warnings = append(warnings, w) }})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(warnings, "\n")
	for _, want := range []string{"cleanup.policy=compact", "retention.bytes=100000000"} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings %q lack %q", got, want)
		}
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "cleanup.policy=compact") }) {
		t.Errorf("notes %q lack the warning", r.Notes)
	}
}
