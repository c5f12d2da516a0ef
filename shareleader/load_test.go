package shareleader

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaderlessPersister's reads wait until their context ends, as the persister does
// while __share_group_state has no leader (it retries COORDINATOR_NOT_AVAILABLE).
type leaderlessPersister struct{ *fakePersister }

func (p leaderlessPersister) ReadState(ctx context.Context, _ *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// fetchWithin sends r's ShareFetch of testTopic/0 (epoch 0) with maxWaitMs and fails
// the test unless it is answered within limit.
func fetchWithin(t *testing.T, r *rig, maxWaitMs int32, limit time.Duration) fetchView {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("m1")
	req.MaxRecords, req.BatchSize, req.MaxBytes, req.MaxWaitMillis = 500, 500, 1<<20, maxWaitMs
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID, tp.Partitions = testTopic, []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}
	req.Topics = append(req.Topics, tp)
	resp := r.m.ShareFetch(ctx, req, RequestOptions{ConnCtx: context.Background()}).Await(ctx)
	if ctx.Err() != nil {
		t.Fatalf("the fetch was not answered within %v", limit)
	}
	return viewOf(resp)
}

// While the share state cannot be read, a fetch is answered when its MaxWait passes,
// with no records and no error (the load goes on).
func TestFetchHonoursMaxWaitWhileTheStateLoads(t *testing.T) {
	r := newRig(t, earliest)
	r.m.cfg.WriteTimeout = time.Minute
	r.m.cfg.Persister = func() Persister { return leaderlessPersister{r.pers} }
	r.replica.produce(2)
	start := time.Now()
	v := fetchWithin(t, r, 200, 10*time.Second)
	if v.code != 0 || v.part.ErrorCode != 0 || len(v.part.AcquiredRecords) != 0 {
		t.Fatalf("fetch while loading: %+v", v)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("answered after %v, before its MaxWait", took)
	}
}

// A load that cannot read the share state fails after WriteTimeout: the partition is
// answered COORDINATOR_NOT_AVAILABLE, even to a fetch without MaxWait.
func TestLoadIsBoundedByTheWriteTimeout(t *testing.T) {
	r := newRig(t, earliest)
	r.m.cfg.WriteTimeout = 200 * time.Millisecond
	r.m.cfg.Persister = func() Persister { return leaderlessPersister{r.pers} }
	r.replica.produce(2)
	if v := fetchWithin(t, r, 0, 10*time.Second); v.part.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("fetch whose load timed out: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(v.part.ErrorCode))
	}
}
