package workload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

func testRunner(partitions int) *runner {
	return &runner{cfg: Config{Topic: "t", Keys: 1, DeliveryTimeout: 5 * time.Second, Logger: hclog.NewNullLogger()}, partitions: partitions}
}

// A new leader answers OFFSET_NOT_AVAILABLE until its high watermark catches up: the
// partition is asked for again, not given up after one answer.
func TestListOffsetsRetriesAPartitionError(t *testing.T) {
	r := testRunner(2)
	calls := 0
	list := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		calls++
		p1 := kadm.ListedOffset{Topic: "t", Partition: 1, Offset: 7}
		if calls < 3 {
			p1 = kadm.ListedOffset{Topic: "t", Partition: 1, Offset: -1, Err: kerr.OffsetNotAvailable}
		}
		return kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 4}, 1: p1}}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := r.listOffsets(ctx, "listing", list)
	if len(got) != 2 || got[0] != 4 || got[1] != 7 || calls != 3 {
		t.Fatalf("listed %v in %d calls, want map[0:4 1:7] in 3", got, calls)
	}
}

func TestListOffsetsGivesUpAtTheDeadline(t *testing.T) {
	r := testRunner(2)
	list := func(context.Context, ...string) (kadm.ListedOffsets, error) {
		return kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 4},
			1: {Topic: "t", Partition: 1, Offset: -1, Err: kerr.OffsetNotAvailable}}}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*listRetry)
	defer cancel()
	got := r.listOffsets(ctx, "listing", list)
	if len(got) != 1 || got[0] != 4 {
		t.Fatalf("listed %v, want map[0:4]", got)
	}
	if len(r.notes) != 1 || !strings.Contains(r.notes[0], "OFFSET_NOT_AVAILABLE") {
		t.Errorf("notes %q, want the partition error", r.notes)
	}
}
