package shareleader

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareAcknowledge handles a ShareAcknowledge request (Kafka's
// KafkaApis.handleShareAcknowledgeRequest): the share session must exist and the
// epoch be its next one (epoch 0 is INVALID_SHARE_SESSION_EPOCH: acknowledgements
// cannot open a session); each partition's acknowledgements are applied and written
// to the share coordinator before the answer; with epoch -1 the session closes after
// them and the member's remaining records here are released.
func (m *Manager) ShareAcknowledge(ctx context.Context, req *kmsg.ShareAcknowledgeRequest, opts RequestOptions) *kmsg.ShareAcknowledgeResponse {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := deref(req.GroupID), deref(req.MemberID)
	key := sessionKey{group, member}
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(lockDuration(m.cfg.GroupConfig(group)))
	}
	fail := func(err error) *kmsg.ShareAcknowledgeResponse {
		resp.ErrorCode, resp.ErrorMessage = m.code(err), errText(err)
		return resp
	}
	var closed *Session
	switch req.ShareSessionEpoch {
	case InitialEpoch:
		return fail(fmt.Errorf("%w: a share acknowledge cannot open a share session", ErrInvalidShareSessionEpoch))
	case FinalEpoch:
		s, err := m.sessions.close(key)
		if err != nil {
			return fail(err)
		}
		closed = s
	default:
		if _, err := m.sessions.next(key, req.ShareSessionEpoch, nil, nil); err != nil {
			return fail(err)
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			batches := make([]share.AcknowledgementBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = ackBatch(b.FirstOffset, b.LastOffset, b.AcknowledgeTypes)
			}
			var err error
			if opts.denied(t.TopicID) {
				err = &codeError{code: kerr.TopicAuthorizationFailed.Code, what: "share acknowledge"}
			} else if err = renewAllowed(req.Version, req.IsRenewAck, batches); err == nil {
				err = m.acknowledge(ctx, keyOf(group, TopicPartition{t.TopicID, p.Partition}), member, batches)
			}
			rp.ErrorCode, rp.ErrorMessage = m.code(err), errText(err)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if closed != nil {
		m.releaseMember(ctx, group, member, m.sessions.partitionsOf(closed))
	}
	return resp
}
