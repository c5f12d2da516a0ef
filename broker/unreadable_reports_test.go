package broker

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// An unreadable partition is named once per unreadableReportInterval, with the answers
// that found it so in between; each partition on its own.
func TestUnreadableReportsNameAPartitionOncePerInterval(t *testing.T) {
	var u unreadableReports
	a, b := segment.TopicPartition{Topic: "a"}, segment.TopicPartition{Topic: "b"}
	t0 := time.Unix(1000, 0)
	if due, _ := u.due(a, t0); !due {
		t.Fatal("the first answer is not named")
	}
	for i := range 5 {
		if due, _ := u.due(a, t0.Add(time.Duration(i)*time.Minute)); due {
			t.Fatalf("answer %d within the interval named", i)
		}
	}
	if due, _ := u.due(b, t0.Add(time.Minute)); !due {
		t.Fatal("another partition's first answer is not named")
	}
	due, silent := u.due(a, t0.Add(unreadableReportInterval))
	if !due || silent != 5 {
		t.Fatalf("after the interval: named %v with %d silent answers, want true and 5", due, silent)
	}
	if len(u.last) != 2 {
		t.Fatalf("%d partitions remembered, want 2", len(u.last))
	}
	u.due(a, t0.Add(3*unreadableReportInterval))
	if _, ok := u.last[b]; ok || len(u.last) != 1 {
		t.Fatalf("partitions named long ago are still remembered: %v", u.last)
	}
}
