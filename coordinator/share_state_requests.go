package coordinator

// The share coordinator's requests, keys 83–87: each share partition of a request
// runs on its key's shard (a request from the broker's Persister holds the keys of
// this coordinator; any other key is answered NOT_COORDINATOR by its partition), and
// the answers are gathered in the request's order. An empty group id is
// INVALID_GROUP_ID for every partition, as Kafka's ShareCoordinatorService answers.

import (
	"time"

	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// gather runs run for every partition of req on its key's shard and answers once all
// have: each partition's error, or its state for the fields its response has.
func (sc *ShareCoordinator) gather(req kmsg.Request,
	run func(now time.Time, s *ShareStateShard, part SharePart, done func(SharePartitionResult)) Result) <-chan kmsg.Response {
	group, parts := ShareRequestParts(req)
	return Gather(len(parts), func(i int, done func(SharePartitionResult)) {
		part := parts[i]
		if group == "" {
			done(SharePartitionResult{ErrorCode: kerr.InvalidGroupID.Code})
			return
		}
		sc.submitKey(part.Key(group), func(now time.Time, s *ShareStateShard) Result {
			return run(now, s, part, done)
		}, func(code int16) { done(SharePartitionResult{ErrorCode: code}) })
	}, func(results []SharePartitionResult) kmsg.Response {
		return ShareResponse(req, func(i int, _ SharePart, entry ShareEntry) {
			if r := results[i]; r.ErrorCode != 0 {
				entry.SetError(r.ErrorCode, errorMessage(r))
			} else {
				entry.setState(r.State)
			}
		})
	})
}

// errorMessage is the message Kafka sends with the result's code (nil for none).
func errorMessage(r SharePartitionResult) *string {
	if r.ErrorMessage != nil || r.ErrorCode == 0 {
		return r.ErrorMessage
	}
	if e, ok := kerr.ErrorForCode(r.ErrorCode).(*kerr.Error); ok {
		return &e.Description
	}
	return nil
}

// InitializeShareGroupState answers r (key 83).
func (sc *ShareCoordinator) InitializeShareGroupState(r *kmsg.InitializeShareGroupStateRequest) <-chan kmsg.Response {
	return sc.gather(r, func(now time.Time, s *ShareStateShard, part SharePart, done func(SharePartitionResult)) Result {
		p := r.Topics[part.Topic].Partitions[part.Index]
		return s.Initialize(now, part.Key(r.GroupID), p.StateEpoch, p.StartOffset, stateless(done))
	})
}

// ReadShareGroupState answers r (key 84).
func (sc *ShareCoordinator) ReadShareGroupState(r *kmsg.ReadShareGroupStateRequest) <-chan kmsg.Response {
	return sc.gather(r, func(now time.Time, s *ShareStateShard, part SharePart, done func(SharePartitionResult)) Result {
		return s.Read(now, part.Key(r.GroupID), r.Topics[part.Topic].Partitions[part.Index].LeaderEpoch, done)
	})
}

// WriteShareGroupState answers r (key 85; v1 carries DeliveryCompleteCount, KIP-1226).
func (sc *ShareCoordinator) WriteShareGroupState(r *kmsg.WriteShareGroupStateRequest) <-chan kmsg.Response {
	return sc.gather(r, func(now time.Time, s *ShareStateShard, part SharePart, done func(SharePartitionResult)) Result {
		p := r.Topics[part.Topic].Partitions[part.Index]
		if r.Version < 1 {
			p.DeliveryCompleteCount = -1
		}
		return s.Write(now, part.Key(r.GroupID), ShareWriteOf(p), stateless(done))
	})
}

// DeleteShareGroupState answers r (key 86).
func (sc *ShareCoordinator) DeleteShareGroupState(r *kmsg.DeleteShareGroupStateRequest) <-chan kmsg.Response {
	return sc.gather(r, func(_ time.Time, s *ShareStateShard, part SharePart, done func(SharePartitionResult)) Result {
		return s.Delete(part.Key(r.GroupID), stateless(done))
	})
}

// ReadShareGroupStateSummary answers r (key 87; v1 carries DeliveryCompleteCount).
func (sc *ShareCoordinator) ReadShareGroupStateSummary(r *kmsg.ReadShareGroupStateSummaryRequest) <-chan kmsg.Response {
	return sc.gather(r, func(_ time.Time, s *ShareStateShard, part SharePart, done func(SharePartitionResult)) Result {
		done(s.Summary(part.Key(r.GroupID)))
		return Result{}
	})
}

// stateless answers a write's partition with its code alone: the responses of keys
// 83, 85 and 86 carry no state.
func stateless(done func(SharePartitionResult)) func(SharePartitionResult) {
	return func(r SharePartitionResult) { done(SharePartitionResult{ErrorCode: r.ErrorCode}) }
}

// ShareWriteOf is the ShareWrite of one partition of a WriteShareGroupState request.
func ShareWriteOf(p kmsg.WriteShareGroupStateRequestTopicPartition) ShareWrite {
	w := ShareWrite{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch,
		Change: share.Change{StartOffset: p.StartOffset, DeliveryCompleteCount: p.DeliveryCompleteCount}}
	for _, b := range p.StateBatches {
		w.Change.Batches = append(w.Change.Batches, share.StateBatch{FirstOffset: b.FirstOffset, LastOffset: b.LastOffset,
			DeliveryState: share.RecordState(b.DeliveryState), DeliveryCount: b.DeliveryCount})
	}
	return w
}
