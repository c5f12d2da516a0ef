package shareleader

import (
	"slices"
	"testing"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A parked fetch of a share session the member has since replaced (it reopened with
// epoch 0) releases what it acquired itself, and nothing the member acquired through
// its new session.
func TestReplacedSessionReleasesOnlyItsOwnAcquisition(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = kmsg.StringPtr("g"), kmsg.StringPtr("m1")
	req.MaxRecords, req.BatchSize, req.MaxBytes, req.MaxWaitMillis = 500, 500, 1<<20, 10_000
	p := kmsg.NewShareFetchRequestTopicPartition()
	tp := kmsg.NewShareFetchRequestTopic()
	tp.TopicID, tp.Partitions = testTopic, []kmsg.ShareFetchRequestTopicPartition{p}
	req.Topics = append(req.Topics, tp)
	parked := r.m.ShareFetch(ctx, req, RequestOptions{ConnCtx: ctx})
	if parked.Wait <= 0 {
		t.Fatal("a fetch of an empty log did not park")
	}
	r.replica.produce(3)
	if got := r.fetch(ctx, "m1", 0).acquired(); !slices.Equal(got, []string{"0-2@1"}) {
		t.Fatalf("m1's new session acquired %v", got)
	}
	r.replica.produce(3)
	if got := viewOf(parked.Await(ctx)).acquired(); !slices.Equal(got, []string{"3-5@1"}) {
		t.Fatalf("the parked fetch acquired %v", got)
	}
	inflight, _, _ := r.m.InFlight(share.Key{GroupID: "g", TopicID: testTopic, Partition: 0})
	var acquired, available []int64
	for _, f := range inflight {
		for o := f.FirstOffset; o <= f.LastOffset; o++ {
			switch f.State {
			case share.Acquired:
				acquired = append(acquired, o)
			case share.Available:
				available = append(available, o)
			}
		}
	}
	if !slices.Equal(acquired, []int64{0, 1, 2}) || !slices.Equal(available, []int64{3, 4, 5}) {
		t.Fatalf("acquired %v, available %v: want 0-2 kept by the new session, 3-5 released", acquired, available)
	}
}

// A RENEW acknowledgement is KIP-1222's, allowed only in version 2 with IsRenewAck
// set: otherwise the partition is answered INVALID_REQUEST and the lock is not renewed.
func TestRenewNeedsVersion2AndIsRenewAck(t *testing.T) {
	r := newRig(t, earliest)
	ctx := testCtx(t)
	r.replica.produce(2)
	r.fetch(ctx, "m1", 0)
	epoch := int32(1)
	send := func(version int16, isRenew bool) int16 {
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version, req.IsRenewAck = version, isRenew
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("g"), kmsg.StringPtr("m1"), epoch
		epoch++
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 1, []int8{int8(share.AckRenew)}
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
		tp := kmsg.NewShareAcknowledgeRequestTopic()
		tp.TopicID, tp.Partitions = testTopic, []kmsg.ShareAcknowledgeRequestTopicPartition{p}
		req.Topics = append(req.Topics, tp)
		resp := r.m.ShareAcknowledge(ctx, req, RequestOptions{ConnCtx: ctx})
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := send(1, false); code != kerr.InvalidRequest.Code {
		t.Fatalf("RENEW in version 1: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	if code := send(2, false); code != kerr.InvalidRequest.Code {
		t.Fatalf("RENEW without IsRenewAck: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	if code := send(2, true); code != 0 {
		t.Fatalf("RENEW in version 2 with IsRenewAck: %v", kerr.ErrorForCode(code))
	}
}
