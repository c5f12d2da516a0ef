package coordinator

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A coordinator loads exactly the partitions it leads, in their leader epochs: a new
// epoch reloads, losing the lead unloads, a partition without a replica waits.
func TestReconcileLoadsLeadPartitionsInTheirEpochs(t *testing.T) {
	var partitions int32 = 3
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return partitions }})
	t.Cleanup(gc.Close)
	logs := map[int32]*fakeLog{0: newFakeLog(1), 1: newFakeLog(1)}
	spec := func(p int32) (LoadSpec, bool) {
		if l, ok := logs[p]; ok {
			return LoadSpec{Log: l}, true
		}
		return LoadSpec{}, false // no replica yet
	}
	loaded := func(want map[int32]int32) {
		t.Helper()
		if got := gc.Loaded(); !maps.Equal(got, want) {
			t.Fatalf("loaded %v, want %v", got, want)
		}
	}
	gc.Reconcile(map[int32]int32{0: 1, 1: 1, 2: 1}, spec)
	loaded(map[int32]int32{0: 1, 1: 1})
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(gc.Serving()) == 2 })
	logs[1].set(func(f *fakeLog) { f.epoch = 2 })
	gc.Reconcile(map[int32]int32{1: 2}, spec)
	loaded(map[int32]int32{1: 2})
	gc.Reconcile(nil, spec)
	loaded(map[int32]int32{})
}

// A key routes to its partition by Kafka's rule; with no topic, or a partition not
// served here, the call fails with NOT_COORDINATOR.
func TestSubmitRoutesKeysAndRefuses(t *testing.T) {
	var partitions int32
	gc := NewGroupCoordinator(GroupConfig{Group: group.DefaultConfig(), Partitions: func() int32 { return partitions }})
	t.Cleanup(gc.Close)
	if _, ok := gc.PartitionFor("g"); ok {
		t.Fatal("a partition without the topic")
	}
	failed := make(chan int16, 1)
	gc.Submit("g", func(time.Time, *group.Shard) group.Effects { t.Error("ran"); return group.Effects{} },
		func(code int16) { failed <- code })
	if code := <-failed; code != kerr.NotCoordinator.Code {
		t.Fatalf("no topic: code %d", code)
	}
	partitions = 50
	if p, _ := gc.PartitionFor("my-group"); p != group.PartitionFor("my-group", 50) {
		t.Fatalf("my-group on partition %d", p)
	}
	resp := <-gc.Respond("g", func(time.Time, *group.Shard, func(kmsg.Response)) group.Effects {
		t.Error("ran")
		return group.Effects{}
	}, func(code int16) kmsg.Response {
		r := kmsg.NewPtrHeartbeatResponse()
		r.ErrorCode = code
		return r
	})
	if code := resp.(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("not served here: code %d", code)
	}
}

// Gather answers once, with every item's result in its place, however they arrive.
func TestGatherAnswersOnceWithEveryResult(t *testing.T) {
	done := make([]func(string), 3)
	ch := Gather(3, func(i int, d func(string)) { done[i] = d }, func(results []string) kmsg.Response {
		r := kmsg.NewPtrListGroupsResponse()
		for _, s := range results {
			g := kmsg.NewListGroupsResponseGroup()
			g.Group = s
			r.Groups = append(r.Groups, g)
		}
		return r
	})
	done[2]("c")
	done[0]("a")
	done[0]("again") // a second answer for one item is ignored
	select {
	case <-ch:
		t.Fatal("answered before every item")
	default:
	}
	done[1]("b")
	var got []string
	for _, g := range (<-ch).(*kmsg.ListGroupsResponse).Groups {
		got = append(got, g.Group)
	}
	if fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("results %v", got)
	}
	if r := <-Gather(0, func(int, func(int)) {}, func([]int) kmsg.Response { return kmsg.NewPtrListGroupsResponse() }); r == nil {
		t.Fatal("no answer for no items")
	}
}

func TestErrorCodeOfRuntimeErrors(t *testing.T) {
	for err, want := range map[error]int16{
		nil:                                    0,
		ErrNotCoordinator:                      kerr.NotCoordinator.Code,
		ErrClosed:                              kerr.NotCoordinator.Code,
		fmt.Errorf("x: %w", ErrLoadInProgress): kerr.CoordinatorLoadInProgress.Code,
		errors.New("other"):                    kerr.UnknownServerError.Code,
	} {
		if got := ErrorCode(err); got != want {
			t.Errorf("ErrorCode(%v) = %d, want %d", err, got, want)
		}
	}
}
