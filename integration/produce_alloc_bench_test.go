package integration

// The allocation measurement of the produce hot path (issue P10 item 2): produce
// requests of one batch of 16 × 1 KiB random records, sent pre-encoded over one raw
// connection to the partition leader with 8 requests in flight, so that the client
// allocates nothing per request and B/op and allocs/op are the brokers' (all three
// run in this process: the leader's handler and append, the followers' fetches and
// appends). Run it with
//
//	go test ./integration/ -run '^$' -bench BenchmarkProducePath -benchmem -benchtime 2000x
//
// and add -memprofile for the allocation sites (docs/benchmarks-history.md, "Produce
// path allocations"; the current figures are in docs/benchmarks.md).

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchProduceWindow is how many produce requests the benchmark keeps in flight.
const benchProduceWindow = 8

func BenchmarkProducePath(b *testing.B) {
	b.Run("rf1-acks1", func(b *testing.B) { benchProducePath(b, 1, 1, 1) })
	b.Run("rf3-acksall", func(b *testing.B) { benchProducePath(b, 3, 3, -1) })
}

func benchProducePath(b *testing.B, nodes int, rf int16, acks int16) {
	c := StartCluster(b, nodes, WithProperty("min.insync.replicas", fmt.Sprint(min(2, int(rf)))))
	const topic = "bench-alloc"
	c.CreateTopicRF(b, topic, 1, rf, nil)
	var leader int
	testwait.For(b, 20*time.Second, func() error {
		pv, err := partitionIn(c, 0, topic, 0)
		if err != nil {
			return err
		}
		if len(pv.ISR) < int(rf) {
			return fmt.Errorf("isr %v", pv.ISR)
		}
		leader = int(pv.Leader)
		return leads(c, leader, topic, 0)
	})
	req := produceRequest(9, acks, topic, 0, randomBatch(16, 1024))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, req, 1)
	nc, err := net.DialTimeout("tcp", c.Addr(leader), 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	var respSize int
	buf := make([]byte, 64<<10)
	readOne := func() {
		if err := nc.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, buf[:4]); err != nil {
			b.Fatal(err)
		}
		n := int(binary.BigEndian.Uint32(buf[:4]))
		if n > len(buf) {
			b.Fatalf("response of %d bytes", n)
		}
		if _, err := io.ReadFull(nc, buf[:n]); err != nil {
			b.Fatal(err)
		}
		switch {
		case respSize == 0:
			resp := req.ResponseKind()
			resp.SetVersion(9)
			if err := resp.ReadFrom(buf[5:n]); err != nil { // correlation id, empty header tags
				b.Fatal(err)
			}
			if p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; p.ErrorCode != 0 {
				b.Fatalf("produce: error code %d: %v", p.ErrorCode, deref(p.ErrorMessage))
			}
			respSize = n
		case n != respSize: // an error answer carries a message
			b.Fatalf("a response of %d bytes, the first was %d", n, respSize)
		}
	}
	send := func() {
		if err := nc.SetWriteDeadline(time.Now().Add(30 * time.Second)); err != nil {
			b.Fatal(err)
		}
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
	}
	// Warm up: connections, follower fetch sessions, the first segment's pages.
	for range 64 {
		send()
		readOne()
	}
	b.SetBytes(int64(len(req.Topics[0].Partitions[0].Records)))
	b.ReportAllocs()
	b.ResetTimer()
	inFlight := 0
	for range b.N {
		if inFlight == benchProduceWindow {
			readOne()
			inFlight--
		}
		send()
		inFlight++
	}
	for ; inFlight > 0; inFlight-- {
		readOne()
	}
	b.StopTimer()
}

// randomBatch returns an uncompressed RecordBatch v2 with baseOffset 0 holding n
// records of size random (incompressible) bytes without keys or headers.
func randomBatch(n, size int) []byte {
	var records []byte
	for i := range n {
		v := make([]byte, size)
		rand.Read(v)
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the zero Length took one varint byte
		records = r.AppendTo(records)
	}
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(n), Records: records,
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}
