package broker

// ReplicaDigests (key 10001, Petrel's own, v0), internal: a replica digests its
// committed batches of the asked ranges (replication.Partition.Digests), so that a
// follower's verifier (replica_verifier.go) and `petrel verify replicas` can compare
// replicas without moving their data (docs/verify.md). Kafka has no such API (its
// ReplicaVerificationTool fetches every record). The key is outside Kafka's range and
// advertised in ApiVersions to the client software petrel-cli alone
// (rpc.Registry.OfferInternal); other clients never see it. Authorization:
// CLUSTER_ACTION on the cluster (a broker) answers every partition; without it each
// topic needs READ, as Fetch (per-batch digests can confirm a guessed value, and a
// request reads up to 32 MiB), else TOPIC_AUTHORIZATION_FAILED. Each partition is
// answered only below the replica's own high watermark, from its log start offset, with
// where it stopped; a replica whose committed batches cannot be read answers
// CORRUPT_MESSAGE for the partition and names it in an ERROR line, at most one per
// partition per 10 minutes (unreadable_reports.go).
// Work is bounded per request: at most replicaDigestsMaxPartitions partitions (more is
// INVALID_REQUEST for the extra ones), replicaDigestsMaxBytes scanned over all of them
// plus the rest of the chunk that reaches it (later partitions get nothing and are
// asked again), replicaDigestsMaxChunks chunks a partition and
// replicaDigestsMaxRequestChunks in all.
//
// Wire format, v0, not flexible, Kafka's primitive types:
//
//	request:  chunkBytes int32, maxBytes int32,
//	          topics [topic string, partitions [partition int32, start int64, end int64]]
//	response: throttleTimeMs int32,
//	          topics [topic string, partitions [partition int32, errorCode int16,
//	            highWatermark int64, logStartOffset int64, leaderEpoch int32, leaderId int32,
//	            isLeader bool, compacted bool, nextOffset int64, scannedBytes int64,
//	            chunks [baseOffset int64, lastOffset int64, batches int32, hash int64, cut bool]]]

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OperatorCLISoftwareName is the client software name (ApiVersions v3+) of Petrel's
// own CLI; internal APIs an operator sends (ReplicaDigests) are advertised to it and
// to no other client. It is a name, not a credential: authorization rules still apply.
const OperatorCLISoftwareName = "petrel-cli"

// ReplicaDigestsKey is ReplicaDigests' api key, outside Kafka's range.
const ReplicaDigestsKey int16 = 10001

// The bounds of one ReplicaDigests request's work.
const (
	replicaDigestsMaxPartitions = 1000
	replicaDigestsMaxBytes      = 32 << 20
	replicaDigestsMaxChunks     = 4096
	// replicaDigestsMaxRequestChunks bounds a whole answer (33 bytes a chunk).
	replicaDigestsMaxRequestChunks = 16384
	replicaDigestsMaxChunkBytes    = 8 << 20
	// ReplicaDigestsChunkBytes is the chunk size the verifiers ask for.
	ReplicaDigestsChunkBytes = 1 << 20
)

func init() {
	rpc.RegisterRequestKind(ReplicaDigestsKey, "ReplicaDigests", func() kmsg.Request { return &ReplicaDigestsRequest{} })
	registerInternalAPI(kmsg.Key(ReplicaDigestsKey), 0, 0, (*Broker).handleReplicaDigests, apiOpts{
		authorize:            authorizeReplicaDigests,
		fillError:            fillErrorReplicaDigests,
		offeredToOperatorCLI: true, // petrel verify replicas
	})
}

// replicaDigestLimits clamps a request's chunk size and byte budget as every replica
// applies them: the verifier digests its own replica with the same values, so that
// equal logs cut equal chunks.
func replicaDigestLimits(chunkBytes, maxBytes int32) (int64, int64) {
	return int64(min(max(chunkBytes, 1), replicaDigestsMaxChunkBytes)), int64(min(max(maxBytes, 1), replicaDigestsMaxBytes))
}

func (b *Broker) handleReplicaDigests(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*ReplicaDigestsRequest)
	resp := r.ResponseKind().(*ReplicaDigestsResponse)
	chunkBytes, budget := replicaDigestLimits(r.ChunkBytes, r.MaxBytes)
	seen, chunksLeft := 0, replicaDigestsMaxRequestChunks
	for _, t := range r.Topics {
		rt := ReplicaDigestsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rp := ReplicaDigestsResponsePartition{Partition: p.Partition, HighWatermark: -1, LogStartOffset: -1, LeaderEpoch: -1, LeaderID: -1, NextOffset: p.Start}
			seen++
			switch lp := b.partitions.get(t.Topic, p.Partition); {
			case seen > replicaDigestsMaxPartitions || p.Start < 0 || p.End < p.Start:
				rp.ErrorCode = kerr.InvalidRequest.Code
			case lp == nil:
				rp.ErrorCode = b.noReplicaError(t.Topic, p.Partition)
			default:
				d, err := lp.Digests(p.Start, p.End, chunkBytes, budget, min(replicaDigestsMaxChunks, chunksLeft))
				if errors.Is(err, replication.ErrDigestCorrupt) {
					// This replica's own committed batches cannot be read: a damaged log,
					// named here at most every unreadableReportInterval; the asker reports
					// the partition too.
					rp.ErrorCode = errorCode(err) // CORRUPT_MESSAGE
					if due, silent := b.unreadable.due(segment.TopicPartition{Topic: t.Topic, Partition: p.Partition}, time.Now()); due {
						b.logger.Error("replica digests: a committed batch of this replica cannot be read", "topic", t.Topic,
							"partition", p.Partition, "broker", b.cfg.NodeID, "error", err, "answers_since_last_line", silent)
					}
					break
				}
				if err != nil {
					rp.ErrorCode = b.errorCodeLogged(err, "replica digests")
					break
				}
				budget, chunksLeft = max(budget-d.Scanned, 0), max(chunksLeft-len(d.Chunks), 0)
				rp.fill(d)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return rpc.Respond(resp)
}

func (rp *ReplicaDigestsResponsePartition) fill(d replication.ReplicaDigests) {
	rp.HighWatermark, rp.LogStartOffset, rp.LeaderEpoch, rp.LeaderID = d.HighWatermark, d.LogStartOffset, d.LeaderEpoch, d.Leader
	rp.IsLeader, rp.Compacted, rp.NextOffset, rp.ScannedBytes, rp.Chunks = d.IsLeader, d.Compacted, d.Next, d.Scanned, d.Chunks
}

// Digests is the partition's answer as replication.CompareDigests reads it.
func (rp *ReplicaDigestsResponsePartition) Digests() replication.ReplicaDigests {
	return replication.ReplicaDigests{HighWatermark: rp.HighWatermark, LogStartOffset: rp.LogStartOffset,
		LeaderEpoch: rp.LeaderEpoch, Leader: rp.LeaderID, IsLeader: rp.IsLeader, Compacted: rp.Compacted,
		Next: rp.NextOffset, Scanned: rp.ScannedBytes, Chunks: rp.Chunks}
}

// authorizeReplicaDigests is ReplicaDigests' authorization rule (checkRequest).
func authorizeReplicaDigests(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*ReplicaDigestsRequest)
	z := checksOf(b, req)
	if z.clusterOK(auth.OpClusterAction) {
		return authzDecision{}
	}
	var denied []ReplicaDigestsRequestTopic
	r.Topics, denied = split(r.Topics, func(t ReplicaDigestsRequestTopic) bool { return z.topicOK(auth.OpRead, t.Topic) })
	return mergeIf(len(denied) > 0, func(resp kmsg.Response) { addReplicaDigestsErrors(resp, denied, codeTopicAuthz) })
}

// fillErrorReplicaDigests is ReplicaDigests' apiOpts.fillError.
func fillErrorReplicaDigests(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	addReplicaDigestsErrors(resp, req.(*ReplicaDigestsRequest).Topics, code)
}

func addReplicaDigestsErrors(resp kmsg.Response, topics []ReplicaDigestsRequestTopic, code int16) {
	out := resp.(*ReplicaDigestsResponse)
	for _, t := range topics {
		rt := ReplicaDigestsResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, ReplicaDigestsResponsePartition{Partition: p.Partition, ErrorCode: code,
				HighWatermark: -1, LogStartOffset: -1, LeaderEpoch: -1, LeaderID: -1, NextOffset: p.Start})
		}
		out.Topics = append(out.Topics, rt)
	}
}

// ReplicaDigestsRequest is ReplicaDigests' request (kmsg.Request).
type ReplicaDigestsRequest struct {
	Version int16
	// ChunkBytes is the chunk size (1: a digest per batch), clamped to [1, 8 MiB];
	// MaxBytes the bytes to scan over the whole request, clamped to [1, 32 MiB].
	ChunkBytes int32
	MaxBytes   int32
	Topics     []ReplicaDigestsRequestTopic
}

// ReplicaDigestsRequestTopic is a topic's ranges.
type ReplicaDigestsRequestTopic struct {
	Topic      string
	Partitions []ReplicaDigestsRequestPartition
}

// ReplicaDigestsRequestPartition asks for the digests of [Start, End).
type ReplicaDigestsRequestPartition struct {
	Partition  int32
	Start, End int64
}

// Key is the API key.
func (*ReplicaDigestsRequest) Key() int16 { return ReplicaDigestsKey }

// MaxVersion is the only version, 0.
func (*ReplicaDigestsRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version.
func (r *ReplicaDigestsRequest) SetVersion(v int16) { r.Version = v }

// GetVersion is the version.
func (r *ReplicaDigestsRequest) GetVersion() int16 { return r.Version }

// IsFlexible is false: v0 uses Kafka's fixed encodings.
func (*ReplicaDigestsRequest) IsFlexible() bool { return false }

// ResponseKind is an empty response of the request's version.
func (r *ReplicaDigestsRequest) ResponseKind() kmsg.Response {
	return &ReplicaDigestsResponse{Version: r.Version}
}

// AppendTo encodes the request.
func (r *ReplicaDigestsRequest) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ChunkBytes)
	dst = kbin.AppendInt32(dst, r.MaxBytes)
	dst = kbin.AppendArrayLen(dst, len(r.Topics))
	for _, t := range r.Topics {
		dst = kbin.AppendString(dst, t.Topic)
		dst = kbin.AppendArrayLen(dst, len(t.Partitions))
		for _, p := range t.Partitions {
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt64(dst, p.Start)
			dst = kbin.AppendInt64(dst, p.End)
		}
	}
	return dst
}

// The fewest bytes a topic, a requested partition and a chunk take on the wire: what
// bounds the counts a message announces before anything is allocated for them.
const (
	replicaDigestsTopicMinBytes     = 2 + 4
	replicaDigestsPartitionBytes    = 4 + 8 + 8
	replicaDigestsAnswerMinBytes    = 4 + 2 + 8 + 8 + 4 + 4 + 1 + 1 + 8 + 8 + 4
	replicaDigestsChunkBytes        = 8 + 8 + 4 + 8 + 1
	replicaDigestsRespTopicMinBytes = 2 + 4
)

// ReadFrom decodes the request, refusing counts its bytes cannot hold.
func (r *ReplicaDigestsRequest) ReadFrom(src []byte) error {
	rd := kbin.Reader{Src: src}
	r.ChunkBytes, r.MaxBytes = rd.Int32(), rd.Int32()
	n, ok := boundedArrayLen(&rd, replicaDigestsTopicMinBytes)
	if !ok {
		return fmt.Errorf("replica digests: %d topics in %d bytes", n, len(src))
	}
	r.Topics = make([]ReplicaDigestsRequestTopic, 0, n)
	for range n {
		t := ReplicaDigestsRequestTopic{Topic: rd.String()}
		m, ok := boundedArrayLen(&rd, replicaDigestsPartitionBytes)
		if !ok {
			return fmt.Errorf("replica digests: %d partitions in %d bytes", m, len(src))
		}
		t.Partitions = make([]ReplicaDigestsRequestPartition, m)
		for i := range t.Partitions {
			t.Partitions[i] = ReplicaDigestsRequestPartition{Partition: rd.Int32(), Start: rd.Int64(), End: rd.Int64()}
		}
		if !rd.Ok() {
			return fmt.Errorf("replica digests: topic %d of %d cut short", len(r.Topics), n)
		}
		r.Topics = append(r.Topics, t)
	}
	return rd.Complete()
}

// ReplicaDigestsResponse is ReplicaDigests' response (kmsg.Response).
type ReplicaDigestsResponse struct {
	Version        int16
	ThrottleMillis int32
	Topics         []ReplicaDigestsResponseTopic
}

// ReplicaDigestsResponseTopic is a topic's answers.
type ReplicaDigestsResponseTopic struct {
	Topic      string
	Partitions []ReplicaDigestsResponsePartition
}

// ReplicaDigestsResponsePartition is a partition's answer: the replica's offsets, its
// leader epoch and leader, and the digests of its committed batches from the range's
// start (or its log start offset) to NextOffset.
type ReplicaDigestsResponsePartition struct {
	Partition      int32
	ErrorCode      int16
	HighWatermark  int64
	LogStartOffset int64
	LeaderEpoch    int32
	LeaderID       int32
	IsLeader       bool
	Compacted      bool
	NextOffset     int64
	ScannedBytes   int64 // the bytes the replica read for this answer
	Chunks         []replication.ChunkDigest
}

// Key is the API key.
func (*ReplicaDigestsResponse) Key() int16 { return ReplicaDigestsKey }

// MaxVersion is the only version, 0.
func (*ReplicaDigestsResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the version.
func (r *ReplicaDigestsResponse) SetVersion(v int16) { r.Version = v }

// GetVersion is the version.
func (r *ReplicaDigestsResponse) GetVersion() int16 { return r.Version }

// IsFlexible is false: v0 uses Kafka's fixed encodings.
func (*ReplicaDigestsResponse) IsFlexible() bool { return false }

// Throttle is the throttle time; the request is not throttled after the response.
func (r *ReplicaDigestsResponse) Throttle() (int32, bool) { return r.ThrottleMillis, false }

// SetThrottle sets the throttle time.
func (r *ReplicaDigestsResponse) SetThrottle(ms int32) { r.ThrottleMillis = ms }

// RequestKind is an empty request of the response's version.
func (r *ReplicaDigestsResponse) RequestKind() kmsg.Request {
	return &ReplicaDigestsRequest{Version: r.Version}
}

// AppendTo encodes the response.
func (r *ReplicaDigestsResponse) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ThrottleMillis)
	dst = kbin.AppendArrayLen(dst, len(r.Topics))
	for _, t := range r.Topics {
		dst = kbin.AppendString(dst, t.Topic)
		dst = kbin.AppendArrayLen(dst, len(t.Partitions))
		for _, p := range t.Partitions {
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			dst = kbin.AppendInt64(dst, p.LogStartOffset)
			dst = kbin.AppendInt32(dst, p.LeaderEpoch)
			dst = kbin.AppendInt32(dst, p.LeaderID)
			dst = kbin.AppendBool(dst, p.IsLeader)
			dst = kbin.AppendBool(dst, p.Compacted)
			dst = kbin.AppendInt64(dst, p.NextOffset)
			dst = kbin.AppendInt64(dst, p.ScannedBytes)
			dst = kbin.AppendArrayLen(dst, len(p.Chunks))
			for _, c := range p.Chunks {
				dst = kbin.AppendInt64(dst, c.BaseOffset)
				dst = kbin.AppendInt64(dst, c.LastOffset)
				dst = kbin.AppendInt32(dst, c.Batches)
				dst = kbin.AppendInt64(dst, int64(c.Hash))
				dst = kbin.AppendBool(dst, c.Cut)
			}
		}
	}
	return dst
}

// ReadFrom decodes the response, refusing counts its bytes cannot hold.
func (r *ReplicaDigestsResponse) ReadFrom(src []byte) error {
	rd := kbin.Reader{Src: src}
	r.ThrottleMillis = rd.Int32()
	n, ok := boundedArrayLen(&rd, replicaDigestsRespTopicMinBytes)
	if !ok {
		return fmt.Errorf("replica digests response: %d topics in %d bytes", n, len(src))
	}
	r.Topics = make([]ReplicaDigestsResponseTopic, 0, n)
	for range n {
		t := ReplicaDigestsResponseTopic{Topic: rd.String()}
		m, ok := boundedArrayLen(&rd, replicaDigestsAnswerMinBytes)
		if !ok {
			return fmt.Errorf("replica digests response: %d partitions in %d bytes", m, len(src))
		}
		t.Partitions = make([]ReplicaDigestsResponsePartition, 0, m)
		for range m {
			p := ReplicaDigestsResponsePartition{Partition: rd.Int32(), ErrorCode: rd.Int16(),
				HighWatermark: rd.Int64(), LogStartOffset: rd.Int64(), LeaderEpoch: rd.Int32(), LeaderID: rd.Int32(),
				IsLeader: rd.Bool(), Compacted: rd.Bool(), NextOffset: rd.Int64(), ScannedBytes: rd.Int64()}
			k, ok := boundedArrayLen(&rd, replicaDigestsChunkBytes)
			if !ok {
				return fmt.Errorf("replica digests response: %d chunks in %d bytes", k, len(src))
			}
			if k > 0 {
				p.Chunks = make([]replication.ChunkDigest, k)
				for i := range p.Chunks {
					p.Chunks[i] = replication.ChunkDigest{BaseOffset: rd.Int64(), LastOffset: rd.Int64(),
						Batches: rd.Int32(), Hash: uint64(rd.Int64()), Cut: rd.Bool()}
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		if !rd.Ok() {
			return fmt.Errorf("replica digests response: topic %d of %d cut short", len(r.Topics), n)
		}
		r.Topics = append(r.Topics, t)
	}
	return rd.Complete()
}

// CompareReplicaDigests compares a leader's and a follower's answers for the range
// that starts at start (replication.CompareDigests), for `petrel verify replicas`.
func CompareReplicaDigests(start int64, leader, follower ReplicaDigestsResponsePartition) replication.Comparison {
	return replication.CompareDigests(start, leader.Digests(), follower.Digests())
}
