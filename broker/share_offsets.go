package broker

// What the share group offsets APIs (90 DescribeShareGroupOffsets, 91
// AlterShareGroupOffsets, 92 DeleteShareGroupOffsets) need of the broker: the share
// coordinators' Persister, the metadata image as coordinator.ShareOffsetsImage, and a
// goroutine to run the coordinator's blocking steps on, bounded in time.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareOffsetsTimeout bounds one share group offsets request: its shard steps and
// its Persister call each wait at most offsets.commit.timeout.ms, as Kafka's
// scheduleWriteOperation; three steps at most.
func (b *Broker) shareOffsetsTimeout() time.Duration {
	return 3 * b.cfg.durationMs("offsets.commit.timeout.ms")
}

// shareOffsetsImage is the current metadata image as the share offsets APIs read it.
func (b *Broker) shareOffsetsImage() coordinator.ShareOffsetsImage {
	im := b.Image()
	return coordinator.ShareOffsetsImage{
		Topics: consumerTopics{im: im},
		Names:  imageTopicNames(im),
		EndOffsets: func(want map[string][]int32) map[string]map[int32]int64 {
			var parts []group.CommittedOffset
			for topic, ps := range want {
				for _, p := range ps {
					parts = append(parts, group.CommittedOffset{Topic: topic, Partition: p})
				}
			}
			out := map[string]map[int32]int64{}
			for tp, hw := range b.highWatermarks(parts) {
				if out[tp.Topic] == nil {
					out[tp.Topic] = map[int32]int64{}
				}
				out[tp.Topic][tp.Partition] = hw
			}
			return out
		},
	}
}

// respondShareOffsets answers with run's response, computed on a goroutine of its
// own (the coordinator's steps block on the shard and the Persister); without a
// Persister, with unavailable's.
func (b *Broker) respondShareOffsets(ctx context.Context, unavailable func(code int16) kmsg.Response,
	run func(ctx context.Context, p coordinator.SharePersister, im coordinator.ShareOffsetsImage) kmsg.Response) rpc.Result {
	p := b.persister()
	if p == nil {
		return rpc.Respond(unavailable(kerr.CoordinatorNotAvailable.Code))
	}
	ch := make(chan kmsg.Response, 1)
	b.goLoop("share group offsets", func() {
		ctx, cancel := context.WithTimeout(ctx, b.shareOffsetsTimeout())
		defer cancel()
		ch <- run(ctx, p, b.shareOffsetsImage())
	})
	return rpc.RespondLater(ch)
}
