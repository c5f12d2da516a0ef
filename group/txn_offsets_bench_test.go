package group

import (
	"testing"
)

// BenchmarkLoadOffsets replays a log of 10,000 offset commits into a new shard: as
// ordinary commits, and as 1,000 transactions of 10 offsets each followed by their
// COMMIT markers (the load path of TxnOffsetCommit's durable offsets). Run with
//
//	go test ./group/ -run '^$' -bench BenchmarkLoadOffsets -benchmem
func BenchmarkLoadOffsets(b *testing.B) {
	const txns, perTxn = 1000, 10
	build := func(transactional bool) []loggedBatch {
		var log []loggedBatch
		for i := range txns {
			var recs []Record
			for p := range perTxn {
				recs = append(recs, offsetCommitRecord("g", topicPartition{"t", int32(p)},
					offsetValue{offset: int64(i), leaderEpoch: -1, expireTimestampMs: -1}))
			}
			if !transactional {
				log = append(log, loggedBatch{records: recs})
				continue
			}
			pid := int64(i % 16)
			log = append(log, loggedBatch{records: recs, producer: &Producer{ID: pid}}, loggedBatch{marker: true, pid: pid, commit: true})
		}
		return log
	}
	for _, mode := range []struct {
		name          string
		transactional bool
	}{{"ordinary", false}, {"transactional", true}} {
		log := build(mode.transactional)
		b.Run(mode.name, func(b *testing.B) {
			for b.Loop() {
				replayLog(b, log)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*txns*perTxn), "ns/record")
		})
	}
}
