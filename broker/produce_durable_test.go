package broker

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// With the fsync default (flush.messages=1) an acknowledged record is on disk when the
// acknowledgement arrives, for acks=1 and acks=all alike: the partition's recovery point
// (the fsynced offset) has passed every acknowledged offset, with many requests in
// flight on one connection.
func TestProduceAcknowledgesOnlyFsyncedRecords(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	for _, acks := range []struct {
		name string
		acks kgo.Acks
	}{{"acks=1", kgo.LeaderAck()}, {"acks=all", kgo.AllISRAcks()}} {
		t.Run(acks.name, func(t *testing.T) {
			topic := "durable-" + acks.name[5:]
			mustCreateTopic(t, adm, topic, 2, nil)
			cl := newClient(t, b, kgo.RequiredAcks(acks.acks), kgo.DefaultProduceTopic(topic),
				kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5), kgo.ProducerLinger(0))
			var acked, early atomic.Int64
			for i := 0; i < 400; i++ {
				cl.Produce(testContext(t), &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}, func(r *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
						return
					}
					acked.Add(1)
					if rp := b.partitions.get(topic, r.Partition).State().RecoveryPoint; rp <= r.Offset {
						early.Add(1)
						t.Errorf("offset %d of partition %d acknowledged with the recovery point at %d", r.Offset, r.Partition, rp)
					}
				})
			}
			if err := cl.Flush(testContext(t)); err != nil {
				t.Fatal(err)
			}
			if acked.Load() != 400 || early.Load() != 0 {
				t.Fatalf("%d acknowledged, %d before their fsync", acked.Load(), early.Load())
			}
		})
	}
}
