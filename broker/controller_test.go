package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// perTopic answers each topic with its own value, computing it once per topic however
// many partitions (and goroutines) ask: the controller's per-topic configs under one
// image are resolved once, never answered from another topic's.
func TestPerTopicMemoizesEachTopicOnce(t *testing.T) {
	var calls atomic.Int32
	f := perTopic(func(topic string) string { calls.Add(1); return "value of " + topic })
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range 1000 {
				topic := fmt.Sprintf("t%d", (p+g)%3)
				if got := f(topic); got != "value of "+topic {
					t.Errorf("%s answered %q", topic, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	// Goroutines racing on a topic's first ask may each compute it; never more.
	if n := calls.Load(); n < 3 || n > 3*4 {
		t.Fatalf("%d computations for 3 topics asked 4,000 times", n)
	}
}
