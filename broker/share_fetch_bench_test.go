package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkShareFetchAccept measures the share-partition leader's path for one member:
// ShareFetch v2 over loopback TCP acquiring up to 500 records, each fetch carrying the
// ACCEPTs of the previous one, with the in-memory Persister (no share coordinator
// round trip). 100-byte records produced in batches of up to 16 KiB. Reported in
// records per second.
//
//	go test -run XXX -bench BenchmarkShareFetchAccept -benchtime 20000x ./broker/
func BenchmarkShareFetchAccept(b *testing.B) {
	br := startTestBroker(b, "", map[string]string{"log.flush.interval.messages": "9223372036854775807"})
	useMemoryPersister(br)
	mustCreateTopic(b, newAdmin(b, br), "bench", 1, nil)
	id := [16]byte(br.Image().Topic("bench").ID)
	c := dialShare(b, br)
	c.shareFetch("m", 0, 0, id, 0) // the session starts at the log end
	prod := newClient(b, br, kgo.DefaultProduceTopic("bench"), kgo.RequiredAcks(kgo.LeaderAck()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(16<<10))
	value := make([]byte, 100)
	for range b.N {
		prod.Produce(testContext(b), &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(testContext(b)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	got, epoch := 0, int32(1)
	var acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	for got < b.N {
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr("sg"), kmsg.StringPtr("m"), epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, 500, 500
		if len(acks) > 0 {
			req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, AcknowledgementBatches: acks}}}}
		}
		resp := kmsg.NewPtrShareFetchResponse()
		c.do(req, resp)
		epoch++
		acks = acks[:0]
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
					b.Fatalf("codes %d %d", p.ErrorCode, p.AcknowledgeErrorCode)
				}
				for _, a := range p.AcquiredRecords {
					got += int(a.LastOffset - a.FirstOffset + 1)
					acks = append(acks, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.FirstOffset, LastOffset: a.LastOffset, AcknowledgeTypes: []int8{1}})
				}
			}
		}
	}
	b.ReportMetric(float64(got)/time.Since(start).Seconds(), "records/s")
}
