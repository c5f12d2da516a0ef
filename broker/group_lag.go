package broker

// Consumer lag (kafka_consumergroup_lag), what kafka-lag-exporter and Burrow compute
// from outside: for every group this broker coordinates and every partition it has
// committed an offset for, the partition's high watermark minus that offset. Computed
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

type committedOffset struct {
	group string
	tp    segment.TopicPartition
	off   int64
}

// groupLags returns the lag of every committed offset of the groups coordinated here.
func (b *Broker) groupLags() []metrics.GroupLag {
	serving := b.groups.Serving()
	if len(serving) == 0 {
		return nil
	}
	ch := make(chan []committedOffset, len(serving))
	for _, p := range serving {
		b.groups.SubmitTo(p, func(_ time.Time, s *group.Shard) group.Effects {
			var out []committedOffset
			for _, g := range s.ListGroups(nil, nil) {
				for _, t := range s.OffsetFetch(g.Group, nil, false).Topics {
					for _, pp := range t.Partitions {
						if pp.Offset >= 0 {
							out = append(out, committedOffset{g.Group, segment.TopicPartition{Topic: t.Topic, Partition: pp.Partition}, pp.Offset})
						}
					}
				}
			}
			ch <- out
			return group.Effects{}
		}, func(int16) { ch <- nil })
	}
	var committed []committedOffset
	timer := time.NewTimer(groupLagTimeout)
	defer timer.Stop()
collect:
	for range serving {
		select {
		case c := <-ch:
			committed = append(committed, c...)
		case <-timer.C:
			break collect
		case <-b.stop:
			return nil
		}
	}
	if len(committed) == 0 {
		return nil
	}
	ends := b.highWatermarks(committed)
	out := make([]metrics.GroupLag, 0, len(committed))
	for _, c := range committed {
		if hw, ok := ends[c.tp]; ok {
			out = append(out, metrics.GroupLag{Group: c.group, Topic: c.tp.Topic, Partition: c.tp.Partition, Lag: max(hw-c.off, 0)})
		}
	}
	return out
}

// highWatermarks finds the high watermark of every partition named: locally where this
// broker leads it, otherwise from its leader. Partitions whose HW is not found are left
// out.
func (b *Broker) highWatermarks(committed []committedOffset) map[segment.TopicPartition]int64 {
	ends := map[segment.TopicPartition]int64{}
	remote := map[int32]map[string][]int32{} // leader -> topic -> partitions
	im := b.Image()
	for _, c := range committed {
		if _, done := ends[c.tp]; done {
			continue
		}
		if lp := b.partitions.get(c.tp.Topic, c.tp.Partition); lp != nil {
			if st := lp.State(); st.Role == replication.Leader {
				ends[c.tp] = st.HighWatermark
				continue
			}
		}
		t := im.Topic(c.tp.Topic)
		if t == nil || int(c.tp.Partition) >= len(t.Partitions) || t.Partitions[c.tp.Partition].Leader < 0 {
			continue
		}
		leader := t.Partitions[c.tp.Partition].Leader
		if remote[leader] == nil {
			remote[leader] = map[string][]int32{}
		}
		ps := remote[leader][c.tp.Topic]
		if len(ps) == 0 || ps[len(ps)-1] != c.tp.Partition {
			remote[leader][c.tp.Topic] = append(ps, c.tp.Partition)
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
