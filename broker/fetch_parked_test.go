package broker

import (
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestParkedConsumerFetchesHoldNoGoroutine: 1,000 consumer fetches parked for a minute
// (10 connections of 100 pipelined requests each) add far fewer than 1,000 goroutines
// to the broker — they wait in the purgatory, not on a goroutine each — and one
// produce answers every one of them with the record.
func TestParkedConsumerFetchesHoldNoGoroutine(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "parked", 1, nil)
	const conns, perConn = 10, 100 // perConn: rpc.DefaultMaxInflight
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("parked"))
	fetch := func(maxWait time.Duration) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, int32(maxWait/time.Millisecond), 1, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "parked"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		return req
	}
	read := func(c net.Conn) *kmsg.FetchResponse {
		t.Helper()
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, frame); err != nil {
			t.Fatal(err)
		}
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		if err := resp.ReadFrom(frame[5:]); err != nil { // correlation id, header tags
			t.Fatal(err)
		}
		return resp
	}
	var cs []net.Conn
	for range conns {
		c, err := net.DialTimeout("tcp", b.Addr().String(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(2 * time.Minute))
		// An answered fetch first: the connection's goroutines run before the count.
		if _, err := c.Write(formatter.AppendRequest(nil, fetch(0), 0)); err != nil {
			t.Fatal(err)
		}
		read(c)
		cs = append(cs, c)
	}
	before := runtime.NumGoroutine()
	for _, c := range cs {
		var frames []byte
		for i := range perConn {
			frames = append(frames, formatter.AppendRequest(nil, fetch(time.Minute), int32(i+1))...)
		}
		if _, err := c.Write(frames); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, 30*time.Second, "1,000 fetches parked", func() bool { return b.purgatory.Parked() == conns*perConn })
	grown := runtime.NumGoroutine() - before
	t.Logf("%d goroutines more with %d fetches parked", grown, conns*perConn)
	if grown >= conns*perConn/10 {
		t.Fatalf("%d goroutines more with %d fetches parked", grown, conns*perConn)
	}
	prod := newClient(t, b, kgo.DefaultProduceTopic("parked"))
	if err := prod.ProduceSync(testContext(t), kgo.StringRecord("wake")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		for range perConn {
			p := read(c).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
				t.Fatalf("woken fetch: error %d, %d record bytes, high watermark %d", p.ErrorCode, len(p.RecordBatches), p.HighWatermark)
			}
		}
	}
	if n := b.purgatory.Parked(); n != 0 {
		t.Fatalf("%d fetches still parked after their answers", n)
	}
}
