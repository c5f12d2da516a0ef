package shareleader

import (
	"context"
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/replication"
)

// TestShareFetchBelowTheLocalLogStart: a share fetch of records that are in remote
// storage only acquires them through RemoteRead; without one it acquires nothing this
// time; neither answers OFFSET_MOVED_TO_TIERED_STORAGE (109) nor any other code.
func TestShareFetchBelowTheLocalLogStart(t *testing.T) {
	remoteRead := func(c *Config) {
		c.RemoteRead = func(_ context.Context, replica Replica, offset int64, maxBytes int, readCommitted bool) ([]byte, []replication.AbortedTxn, error) {
			r := replica.(*fakeReplica)
			r.mu.Lock()
			defer r.mu.Unlock()
			res := r.readLocked(offset, maxBytes, readCommitted)
			return res.Records, res.Aborted, nil
		}
	}
	for _, c := range []struct {
		name string
		opts []func(*Config)
		want []string
	}{{"remote read", []func(*Config){remoteRead}, []string{"0-14@1"}}, {"no remote read", nil, nil}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, earliest, c.opts...)
			r.replica.produce(5)
			r.replica.produce(5)
			r.replica.produce(5)
			r.replica.localStart = 10
			v := r.fetch(testCtx(t), "m1", 0)
			if v.code != 0 || !v.found || v.part.ErrorCode != 0 {
				t.Fatalf("fetch: %+v", v)
			}
			if got := v.acquired(); !slices.Equal(got, c.want) {
				t.Fatalf("acquired %v, want %v", got, c.want)
			}
		})
	}
}
