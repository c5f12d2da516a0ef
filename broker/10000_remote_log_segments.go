package broker

// RemoteLogSegments (key 10000, Petrel's own, v0), internal: a partition leader's remote
// log manager reports remote segment state changes (KIP-405) to the controller, which
// records the valid ones in one Raft entry (controller.RecordRemoteLogSegments). Kafka
// has no such API (its RemoteLogMetadataManager writes the __remote_log_metadata topic);
// the key is outside Kafka's range, the API is never advertised in ApiVersions, needs
// CLUSTER_ACTION like AlterPartition, and is forwarded to the controller like every
// controller API. The whole request is refused with STALE_BROKER_EPOCH when the sender
// is not registered at the broker epoch it sent (-1 included), POLICY_VIOLATION past 500
// changes. Each change is answered with its own code: UNKNOWN_TOPIC_OR_PARTITION,
// NOT_LEADER_OR_FOLLOWER (the sender does not lead the partition), FENCED_LEADER_EPOCH
// (another leader epoch), INVALID_REQUEST (a transition Kafka refuses, custom metadata
// past 128 bytes, leader epochs past 1,000 or out of order) or NOT_CONTROLLER (the
// controller is behind the sender's epoch; sent again). Trust in the sender's broker id
// is trust in its CLUSTER_ACTION, as for AlterPartition and BrokerHeartbeat.
//
// Wire format, v0, not flexible, Kafka's primitive types:
//
//	request:  brokerId int32, brokerEpoch int64, changes [change]
//	change:   topicId uuid, partition int32, leaderEpoch int32, segmentId uuid,
//	          state int8, startOffset int64, endOffset int64, maxTimestampMs int64,
//	          sizeInBytes int32, txnIdxEmpty bool,
//	          leaderEpochs [epoch int32, startOffset int64], customMetadata nullable bytes
//	response: throttleTimeMs int32, errorCode int16, errorCodes [int16] (one a change)

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteLogSegmentsKey is RemoteLogSegments' api key, outside Kafka's range.
const remoteLogSegmentsKey int16 = 10000

func init() {
	rpc.RegisterRequestKind(remoteLogSegmentsKey, "RemoteLogSegments", func() kmsg.Request { return &remoteLogSegmentsRequest{} })
	registerInternalAPI(kmsg.Key(remoteLogSegmentsKey), 0, 0, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpClusterAction),
		controller: onController((*Broker).recordRemoteLogSegments),
		fillError:  fillErrorRemoteLogSegments,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*remoteLogSegmentsResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// recordRemoteLogSegments runs on the controller.
func (b *Broker) recordRemoteLogSegments(ctx context.Context, r *remoteLogSegmentsRequest) *remoteLogSegmentsResponse {
	resp := &remoteLogSegmentsResponse{}
	outcomes, err := b.ctrl.RecordRemoteLogSegments(ctx, r.BrokerID, r.BrokerEpoch, r.Changes)
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "remote log segments")
		return resp
	}
	resp.ErrorCodes = make([]int16, len(outcomes))
	for i, e := range outcomes {
		resp.ErrorCodes[i] = errorCode(e)
	}
	return resp
}

// fillErrorRemoteLogSegments is RemoteLogSegments' apiOpts.fillError.
func fillErrorRemoteLogSegments(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	resp.(*remoteLogSegmentsResponse).ErrorCode = code
}

// remoteLogSegmentsRequest is RemoteLogSegments' request (kmsg.Request).
type remoteLogSegmentsRequest struct {
	Version     int16
	BrokerID    int32
	BrokerEpoch int64
	// Changes are the remote segment state changes, each a record to write.
	Changes []metadata.RemoteLogSegmentRecord
}

func (*remoteLogSegmentsRequest) Key() int16           { return remoteLogSegmentsKey }
func (*remoteLogSegmentsRequest) MaxVersion() int16    { return 0 }
func (r *remoteLogSegmentsRequest) SetVersion(v int16) { r.Version = v }
func (r *remoteLogSegmentsRequest) GetVersion() int16  { return r.Version }
func (*remoteLogSegmentsRequest) IsFlexible() bool     { return false }
func (r *remoteLogSegmentsRequest) ResponseKind() kmsg.Response {
	return &remoteLogSegmentsResponse{Version: r.Version}
}

func (r *remoteLogSegmentsRequest) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	dst = kbin.AppendArrayLen(dst, len(r.Changes))
	for _, c := range r.Changes {
		s := c.Segment
		dst = kbin.AppendUuid(dst, c.TopicID)
		dst = kbin.AppendInt32(dst, c.PartitionID)
		dst = kbin.AppendInt32(dst, c.LeaderEpoch)
		dst = kbin.AppendUuid(dst, s.ID)
		dst = kbin.AppendInt8(dst, int8(s.State))
		dst = kbin.AppendInt64(dst, s.StartOffset)
		dst = kbin.AppendInt64(dst, s.EndOffset)
		dst = kbin.AppendInt64(dst, s.MaxTimestampMs)
		dst = kbin.AppendInt32(dst, s.SizeInBytes)
		dst = kbin.AppendBool(dst, s.TxnIdxEmpty)
		dst = kbin.AppendArrayLen(dst, len(s.LeaderEpochs))
		for _, e := range s.LeaderEpochs {
			dst = kbin.AppendInt32(dst, e.Epoch)
			dst = kbin.AppendInt64(dst, e.StartOffset)
		}
		dst = kbin.AppendNullableBytes(dst, s.CustomMetadata)
	}
	return dst
}

// The fewest bytes a change and a leader epoch take on the wire: what bounds the counts
// a request announces before anything is allocated for them (decoding runs before
// authorization).
const (
	remoteLogChangeMinBytes = 16 + 4 + 4 + 16 + 1 + 8 + 8 + 8 + 4 + 1 + 4 + 4 // empty epochs, null metadata
	remoteLogEpochBytes     = 4 + 8
)

func (r *remoteLogSegmentsRequest) ReadFrom(src []byte) error {
	rd := kbin.Reader{Src: src}
	r.BrokerID, r.BrokerEpoch = rd.Int32(), rd.Int64()
	n, ok := boundedArrayLen(&rd, remoteLogChangeMinBytes)
	if !ok {
		return fmt.Errorf("remote log segments: %d changes in %d bytes", n, len(src))
	}
	r.Changes = make([]metadata.RemoteLogSegmentRecord, 0, n)
	for range n {
		var c metadata.RemoteLogSegmentRecord
		c.TopicID = rd.Uuid()
		c.PartitionID, c.LeaderEpoch = rd.Int32(), rd.Int32()
		s := &c.Segment
		s.ID = rd.Uuid()
		s.State = metadata.RemoteLogSegmentState(rd.Int8())
		s.StartOffset, s.EndOffset, s.MaxTimestampMs = rd.Int64(), rd.Int64(), rd.Int64()
		s.SizeInBytes, s.TxnIdxEmpty = rd.Int32(), rd.Bool()
		m, ok := boundedArrayLen(&rd, remoteLogEpochBytes)
		if !ok {
			return fmt.Errorf("remote log segments: %d leader epochs in %d bytes", m, len(src))
		}
		if m > 0 {
			s.LeaderEpochs = make([]metadata.RemoteEpochStart, m)
			for i := range s.LeaderEpochs {
				s.LeaderEpochs[i] = metadata.RemoteEpochStart{Epoch: rd.Int32(), StartOffset: rd.Int64()}
			}
		}
		if cm := rd.NullableBytes(); cm != nil {
			s.CustomMetadata = append([]byte{}, cm...)
		}
		if !rd.Ok() {
			return fmt.Errorf("remote log segments: change %d of %d cut short", len(r.Changes), n)
		}
		r.Changes = append(r.Changes, c)
	}
	return rd.Complete()
}

// remoteLogSegmentsResponse is RemoteLogSegments' response (kmsg.Response).
type remoteLogSegmentsResponse struct {
	Version        int16
	ThrottleMillis int32
	// ErrorCode is the whole request's (NOT_CONTROLLER, STALE_BROKER_EPOCH, ...).
	ErrorCode int16
	// ErrorCodes are the changes' codes, in the request's order.
	ErrorCodes []int16
}

func (*remoteLogSegmentsResponse) Key() int16                { return remoteLogSegmentsKey }
func (*remoteLogSegmentsResponse) MaxVersion() int16         { return 0 }
func (r *remoteLogSegmentsResponse) SetVersion(v int16)      { r.Version = v }
func (r *remoteLogSegmentsResponse) GetVersion() int16       { return r.Version }
func (*remoteLogSegmentsResponse) IsFlexible() bool          { return false }
func (r *remoteLogSegmentsResponse) Throttle() (int32, bool) { return r.ThrottleMillis, false }
func (r *remoteLogSegmentsResponse) SetThrottle(ms int32)    { r.ThrottleMillis = ms }
func (r *remoteLogSegmentsResponse) RequestKind() kmsg.Request {
	return &remoteLogSegmentsRequest{Version: r.Version}
}

func (r *remoteLogSegmentsResponse) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ThrottleMillis)
	dst = kbin.AppendInt16(dst, r.ErrorCode)
	dst = kbin.AppendArrayLen(dst, len(r.ErrorCodes))
	for _, c := range r.ErrorCodes {
		dst = kbin.AppendInt16(dst, c)
	}
	return dst
}

func (r *remoteLogSegmentsResponse) ReadFrom(src []byte) error {
	rd := kbin.Reader{Src: src}
	r.ThrottleMillis, r.ErrorCode = rd.Int32(), rd.Int16()
	n, ok := boundedArrayLen(&rd, 2)
	if !ok {
		return fmt.Errorf("remote log segments response: %d codes in %d bytes", n, len(src))
	}
	r.ErrorCodes = make([]int16, n)
	for i := range r.ErrorCodes {
		r.ErrorCodes[i] = rd.Int16()
	}
	return rd.Complete()
}
