package coordinator

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// An add refused with CONCURRENT_TRANSACTIONS is tried again (after 2, 4, ... 32 ms)
// until it gets another answer or the backoff is spent; a refusal before the shard
// (NOT_COORDINATOR) is answered at once. done is called exactly once.
func TestAddPartitionsRetriesConcurrentTransactions(t *testing.T) {
	concurrent := kerr.ConcurrentTransactions.Code
	for _, tc := range []struct {
		name     string
		answers  []int16 // by attempt; the last repeats
		failed   bool    // the attempt fails before the shard
		want     int16
		attempts int32
	}{
		{"ok at once", []int16{0}, false, 0, 1},
		{"ok after two", []int16{concurrent, concurrent, 0}, false, 0, 3},
		{"other code", []int16{concurrent, kerr.ProducerFenced.Code}, false, kerr.ProducerFenced.Code, 2},
		{"always concurrent", []int16{concurrent}, false, concurrent, 6},
		{"not coordinator", []int16{kerr.NotCoordinator.Code}, true, kerr.NotCoordinator.Code, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var attempts, calls atomic.Int32
			got := make(chan int16, 2)
			retryConcurrent(func(result, failed func(int16)) {
				n := int(attempts.Add(1)) - 1
				code := tc.answers[min(n, len(tc.answers)-1)]
				if tc.failed {
					failed(code)
					failed(code) // a second call of the runtime's fail is ignored
					return
				}
				result(code)
			}, func(code int16) { calls.Add(1); got <- code })
			select {
			case code := <-got:
				if code != tc.want {
					t.Fatalf("code %d, want %d", code, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no answer")
			}
			if n := attempts.Load(); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("done called %d times", n)
			}
		})
	}
}
