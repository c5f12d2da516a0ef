package broker

// Consumer lag (kafka_consumergroup_lag), what kafka-lag-exporter and Burrow compute
// from outside: for every group this broker coordinates and every partition it has
// committed an offset for, the partition's high watermark minus that offset (group.Lags,
// the pure rule; here the feeding and the metric). Computed
// at scrape time: the committed offsets are read on each serving shard's executor
// (bounded by groupLagTimeout), the high watermarks from the local replica where this
// broker leads the partition and otherwise with one ListOffsets (latest,
// read_uncommitted: the HW) per leader.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metrics"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupLagTimeout bounds each step of the lag computation in one scrape.
const groupLagTimeout = 2 * time.Second

// groupLags returns the lag of every committed offset of the groups coordinated here
// (group.Lags).
func (b *Broker) groupLags() []metrics.GroupLag {
	committed := fromServingShards(b, (*group.Shard).CommittedOffsets)
	if len(committed) == 0 {
		return nil
	}
	ends := b.highWatermarks(committed)
	lags := group.Lags(committed, func(topic string, partition int32) (int64, bool) {
		hw, ok := ends[segment.TopicPartition{Topic: topic, Partition: partition}]
		return hw, ok
	})
	out := make([]metrics.GroupLag, len(lags))
	for i, l := range lags {
		out[i] = metrics.GroupLag(l)
	}
	return out
}

// highWatermarks finds the high watermark of every partition named: locally where this
// broker leads it, otherwise from its leader. Partitions whose HW is not found are left
// out.
func (b *Broker) highWatermarks(committed []group.CommittedOffset) map[segment.TopicPartition]int64 {
	ends := map[segment.TopicPartition]int64{}
	remote := map[int32]map[string][]int32{} // leader -> topic -> partitions
	im := b.Image()
	for _, c := range committed {
		tp := segment.TopicPartition{Topic: c.Topic, Partition: c.Partition}
		if _, done := ends[tp]; done {
			continue
		}
		if lp := b.partitions.get(tp.Topic, tp.Partition); lp != nil {
			if st := lp.State(); st.Role == replication.Leader {
				ends[tp] = st.HighWatermark
				continue
			}
		}
		t := im.Topic(tp.Topic)
		if t == nil || int(tp.Partition) >= len(t.Partitions) || t.Partitions[tp.Partition].Leader < 0 {
			continue
		}
		leader := t.Partitions[tp.Partition].Leader
		if remote[leader] == nil {
			remote[leader] = map[string][]int32{}
		}
		ps := remote[leader][tp.Topic]
		if len(ps) == 0 || ps[len(ps)-1] != tp.Partition {
			remote[leader][tp.Topic] = append(ps, tp.Partition)
		}
	}
	for leader, topics := range remote {
		b.listLatestOffsets(leader, topics, ends)
	}
	return ends
}

// listLatestOffsets asks a leader for the high watermarks of its partitions.
func (b *Broker) listLatestOffsets(leader int32, topics map[string][]int32, ends map[segment.TopicPartition]int64) {
	ctx, cancel := b.waitTimeout(context.Background(), groupLagTimeout)
	defer cancel()
	cl, err := b.connectToBroker(ctx, leader)
	if err != nil {
		return
	}
	defer cl.Close()
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = -1
	for topic, parts := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := cl.Do(ctx, req)
	if err != nil {
		return
	}
	for _, t := range resp.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Offset >= 0 {
				ends[segment.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.Offset
			}
		}
	}
}
