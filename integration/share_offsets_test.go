package integration

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The share group offsets admin on three nodes, through the share coordinators: the group's
// coordinator answers for partitions led by the other nodes, each partition's lag
// from its own leader's high watermark; reset to earliest and to latest move the
// start offsets and the lag; delete forgets the topic.
func TestShareGroupOffsets_AcrossNodes(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	c.CreateTopic(t, "jobs", 3, nil)
	leaders := map[int32]bool{}
	for _, p := range c.WaitConverged().Topics["jobs"].Partitions {
		leaders[p.Leader] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("the partitions' leaders %v: want them on several nodes", leaders)
	}
	ctx := testContext(t)
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(3) {
		for i := range int(p) + 2 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "jobs", Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}

	reset := func(to func(p int32) int64) {
		t.Helper()
		offsets := kadm.Offsets{}
		for p := range int32(3) {
			offsets.Add(kadm.Offset{Topic: "jobs", Partition: p, At: to(p)})
		}
		testwait.ForWhat(t, 30*time.Second, "the reset", func() error {
			resps, err := adm.AlterShareGroupOffsets(ctx, "workers", offsets)
			if err != nil {
				return err
			}
			return resps.Error()
		})
	}
	lags := func() map[int32]string {
		t.Helper()
		d, err := adm.DescribeShareGroupOffsets(ctx, "workers")
		if err != nil || d["workers"].Err != nil {
			t.Fatal(err, d["workers"].Err)
		}
		out := map[int32]string{}
		for p, o := range d["workers"].Offsets["jobs"] {
			out[p] = fmt.Sprintf("%d/%d", o.StartOffset, o.Lag)
		}
		return out
	}
	reset(func(int32) int64 { return 0 })
	if got := fmt.Sprint(lags()); got != "map[0:0/2 1:0/3 2:0/4]" {
		t.Fatalf("after reset to earliest (start/lag): %s", got)
	}
	reset(func(p int32) int64 { o, _ := ends.Lookup("jobs", p); return o.Offset })
	if got := fmt.Sprint(lags()); got != "map[0:2/0 1:3/0 2:4/0]" {
		t.Fatalf("after reset to latest (start/lag): %s", got)
	}
	deleted, err := adm.DeleteShareGroupOffsets(ctx, "workers", "jobs")
	if err != nil || deleted.Error() != nil {
		t.Fatal(err, deleted.Error())
	}
	if got := lags(); len(got) != 0 {
		t.Fatalf("after delete: %v", got)
	}
	if d, _ := adm.DeleteShareGroupOffsets(ctx, "workers", "jobs"); !errors.Is(d["jobs"], kerr.UnknownTopicOrPartition) {
		t.Fatalf("deleting again: %v", d["jobs"])
	}
}
