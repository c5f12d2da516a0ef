package broker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
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

// With flush.messages=1 an acks=1 produce is answered once an fsync behind its append
// covers it, and the connection reads on meanwhile: while one fsync is held open, a
// second request in flight on the same connection and the requests of two other
// connections are all appended and none is answered; once it ends, one more fsync
// answers them all.
func TestAcksOneProduceIsAnsweredAfterAnFsyncBehindTheAppend(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "acks1", 1, nil)
	var fsyncs atomic.Int32
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	var armed atomic.Bool
	testHookFsynced = func() {
		if armed.Load() && fsyncs.Add(1) == 1 {
			entered <- struct{}{}
			<-release
		}
	}
	t.Cleanup(func() { open(); testHookFsynced = nil })
	clients := make([]*kgo.Client, 3)
	for i := range clients {
		clients[i] = newClient(t, b, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DefaultProduceTopic("acks1"),
			kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(5), kgo.ProducerLinger(0))
	}
	var part *localPartition
	var answered atomic.Int32
	answers := make(chan error, 8)
	produce := func(cl *kgo.Client) {
		cl.Produce(testContext(t), &kgo.Record{Value: []byte("v")}, func(r *kgo.Record, err error) {
			if err == nil && part.State().RecoveryPoint <= r.Offset {
				err = fmt.Errorf("offset %d answered with the recovery point at %d", r.Offset, part.State().RecoveryPoint)
			}
			answered.Add(1)
			answers <- err
		})
	}
	logEnd := func(want int64) {
		t.Helper()
		testwait.ForWhat(t, 30*time.Second, fmt.Sprintf("log end %d with the fsync held", want), func() error {
			if leo := part.State().LogEndOffset; leo != want {
				return fmt.Errorf("log end %d", leo)
			}
			return nil
		})
	}
	for _, cl := range clients { // connected, and the partition's first fsyncs done
		if err := cl.ProduceSync(testContext(t), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	part = b.partitions.get("acks1", 0)
	armed.Store(true)
	produce(clients[0])
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no fsync behind the first append")
	}
	produce(clients[0]) // in flight behind the first request, on the same connection
	logEnd(5)
	produce(clients[1])
	produce(clients[2])
	logEnd(7)
	if n := answered.Load(); n != 0 {
		t.Fatalf("%d acks=1 produces answered while the fsync behind them was held", n)
	}
	open()
	for range 4 {
		select {
		case err := <-answers:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("an acks=1 produce was not answered after its fsync")
		}
	}
	if n := fsyncs.Load(); n != 2 {
		t.Fatalf("%d fsyncs for 1 append and 3 appended during its fsync, want 2", n)
	}
}
