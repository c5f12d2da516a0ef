package replication

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFollowerFetchRequest builds and encodes a follower's fetch request to one
// leader at steady state (no fetch offset moved) for 6,667 partitions in four topics
// of 5,000 — a leader's share of one follower's replicas at 20,000 partitions RF 3 on
// three nodes — without a session (every fetch before KIP-227 sessions) and
// incrementally, and reports its bytes and those of the leader's idle answer (every
// partition with its offsets, or none).
func BenchmarkFollowerFetchRequest(b *testing.B) {
	const partitions = 6667
	var want []kmsg.FetchRequestTopic
	for i := range partitions {
		topic := fmt.Sprintf("s20000-%d", i%4)
		if len(want) <= i%4 {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = topic
			want = append(want, t)
		}
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.PartitionMaxBytes = int32(i/4), 0, 0, -1, 1<<20
		want[i%4].Partitions = append(want[i%4].Partitions, fp)
	}
	idle := kmsg.NewPtrFetchResponse()
	idle.Version = 12
	for _, t := range want {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.RecordBatches = p.Partition, []byte{}
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = 0, 0, 0
			rt.Partitions = append(rt.Partitions, sp)
		}
		idle.Topics = append(idle.Topics, rt)
	}
	empty := kmsg.NewPtrFetchResponse()
	empty.Version, empty.SessionID = 12, 7
	for _, mode := range []string{"sessionless", "incremental"} {
		b.Run(mode, func(b *testing.B) {
			var s followerSession
			if mode == "incremental" {
				req := kmsg.NewPtrFetchRequest()
				s.build(req, want)
				s.answered(empty)
			}
			var buf []byte
			b.ReportAllocs()
			for b.Loop() {
				req := kmsg.NewPtrFetchRequest()
				req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, 1, 500, 1, 1<<30
				if mode == "sessionless" {
					req.SessionEpoch, req.Topics = -1, want
				} else {
					s.build(req, want)
					s.answered(empty)
				}
				buf = req.AppendTo(buf[:0])
			}
			answer := idle
			if mode == "incremental" {
				answer = empty
			}
			b.ReportMetric(float64(len(buf)), "request-bytes")
			b.ReportMetric(float64(len(answer.AppendTo(nil))), "idle-answer-bytes")
		})
	}
}
