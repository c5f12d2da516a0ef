package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// listOffsets answers ListOffsets -4 (earliest local) with the partition's local log
// start and the epoch of the batch holding it.
func (l *fakeLeader) listOffsets(_ context.Context, r *rpc.Request) rpc.Result {
	req := r.Body.(*kmsg.ListOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Offset, rp.Timestamp, rp.LeaderEpoch = p.Partition, l.localStart[p.Partition], -1, -1
			var at int64
			for _, b := range l.batches[p.Partition] {
				if next := at + int64(recordCount(b)); next > rp.Offset {
					rp.LeaderEpoch = int32(binary.BigEndian.Uint32(b[12:]))
					break
				} else {
					at = next
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return rpc.Respond(resp)
}

// newTieredFollower is partition 0 of "t", remote storage enabled, following the fake
// leader at addr in epoch 1 with remote as its RemoteLog.
func newTieredFollower(t *testing.T, addr string, remote RemoteLog) *Partition {
	t.Helper()
	fs := NewFetchers(FetcherConfig{BrokerID: 1, MaxWait: 50 * time.Millisecond, Backoff: 50 * time.Millisecond,
		Connect: func(ctx context.Context, _ int32) (*rpc.Client, error) { return rpc.Dial(ctx, addr, "follower-1") }})
	t.Cleanup(fs.Close)
	cfg := segment.DefaultConfig()
	cfg.RemoteStorageEnable = true
	log, _, err := segment.Open(t.TempDir(), cfg, segment.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewPartition("t", 0, log, 0, Options{BrokerID: 1, Remote: remote})
	t.Cleanup(func() { p.Stop(false) })
	if err := p.BecomeFollower(1, 0); err != nil {
		t.Fatal(err)
	}
	fs.Follow(p, 0)
	return p
}

// TestFollowerBuildsFromRemoteStorage: a follower whose fetch offset is below the
// leader's local log start gets OFFSET_MOVED_TO_TIERED_STORAGE, asks the leader for its
// local log start (ListOffsets -4) and the epoch before it (OffsetForLeaderEpoch: the
// epochs have a gap), builds its epochs from the remote segment ending below it and
// fetches on from there.
func TestFollowerBuildsFromRemoteStorage(t *testing.T) {
	l, addr := newFakeLeader(t)
	l.appendBatch(0, 4, 0) // [0,4) in epoch 0
	l.appendBatch(0, 2, 2) // [4,6) in epoch 2
	l.appendBatch(0, 4, 3) // [6,10) in epoch 3
	l.mu.Lock()
	l.localStart = map[int32]int64{0: 6}
	l.mu.Unlock()
	remote := &fakeRemoteLog{aux: RemoteLogAuxState{NextOffset: 6, Epochs: epochEntries(0, 0, 2, 4)}}
	p := newTieredFollower(t, addr, remote)
	reaches(t, p, 10)
	// The local start 6 is in epoch 3; OffsetForLeaderEpoch(2) ends at 6, so offset 5 is
	// epoch 2's.
	if !slices.Equal(remote.auxAsked[:2], []int64{2, 5}) {
		t.Fatalf("remote state asked for %v, want epoch 2 offset 5", remote.auxAsked)
	}
	st, tiers := p.State(), p.TieredOffsets()
	if st.LogStartOffset != 0 || tiers.LocalLogStartOffset != 6 {
		t.Fatalf("log start %d, local %d", st.LogStartOffset, tiers.LocalLogStartOffset)
	}
	p.WithLog(func(lg *segment.Log) error {
		if e := lg.LeaderEpochs().Entries(); !slices.Equal(e, epochEntries(0, 0, 2, 4, 3, 6)) {
			t.Fatalf("epochs %+v", e)
		}
		return nil
	})
}

// TestFollowerWithoutRemoteLogBacksOff: with no RemoteLog wired the follower cannot
// build its state; it backs off and asks again, appending nothing, as Kafka retries
// until remote storage is available.
func TestFollowerWithoutRemoteLogBacksOff(t *testing.T) {
	l, addr := newFakeLeader(t)
	l.appendBatch(0, 4, 0)
	l.mu.Lock()
	l.localStart = map[int32]int64{0: 2}
	l.mu.Unlock()
	p := newTieredFollower(t, addr, nil)
	testwait.For(t, 10*time.Second, func() error {
		if _, errs, _ := l.counts(0); errs < 3 {
			return errors.New("fewer than three answers of OFFSET_MOVED_TO_TIERED_STORAGE")
		}
		return nil
	})
	if st := p.State(); st.LogEndOffset != 0 {
		t.Fatalf("log end %d", st.LogEndOffset)
	}
}
