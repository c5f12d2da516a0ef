package perf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPerf_ProduceCeilingFloorAnswersTheKafkaProducer(t *testing.T) {
	// The kgo producer against the floor's processes: every record answered, with and
	// without fsyncs, and no file left behind.
	for _, extra := range [][]string{{"--replicas", "3"}, {"--replicas", "2", "--fsync-dir", t.TempDir()}, {"--replicas", "1"}} {
		args := append([]string{"perf", "produce-ceiling", "--floor", "--records", "300", "--record-size", "1024",
			"--max-buffered-records", "1", "--json"}, extra...)
		sum := decodeSummary(t, mustRun(t, "", args...).Stdout)
		if sum.Records != 300 || sum.Errors != 0 || sum.LatencyMs == nil || sum.LatencyMs.P50 <= 0 {
			t.Fatalf("%v: %+v", extra, sum)
		}
		if len(extra) > 2 {
			if left, _ := os.ReadDir(extra[3]); len(left) != 0 {
				t.Fatalf("files left in --fsync-dir: %v", left)
			}
		}
	}
	for _, bad := range [][]string{{"--max-buffered-records", "0"}, {"--max-buffered-records", "1", "--acks", "1"},
		{"--max-buffered-records", "1", "--partitions", "2"}} {
		mustFail(t, "one record in flight", "", append([]string{"perf", "produce-ceiling", "--floor", "--records", "1"}, bad...)...)
	}
	mustFail(t, "bad --replicas 0", "", "perf", "produce-ceiling", "--floor", "--records", "1", "--max-buffered-records", "1", "--replicas", "0")
}

func TestFloorLeaderAnswersAProduceOnlyOnceTheFollowerFetchedPastIt(t *testing.T) {
	// A floor leader with --kafka in this process, a producer and one follower both
	// played by the test: the Produce's record reaches the follower's parked fetch, and
	// its answer waits for the follower's next fetch.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kafka, err := newCannedBroker(ceilingTopic, 1, 0, 1, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	var closers closerSet
	closers.add(ln)
	closers.add(kafka.ln)
	l := &floorLeader{want: 1, ready: make(chan struct{}), kafka: kafka}
	served := make(chan error, 1)
	go func() { served <- l.serve(ln, &closers) }()
	defer func() {
		closers.closeAll()
		<-served
	}()

	follower, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	closers.add(follower)
	if _, err := follower.Write(append([]byte{floorRoleFollower}, floorOffsetFrame(0)...)); err != nil {
		t.Fatal(err)
	}
	producer, err := net.Dial("tcp", kafka.addr())
	if err != nil {
		t.Fatal(err)
	}
	closers.add(producer)
	req := cannedProduceRequest(cannedBatch(1, 16))
	req.Version = 7
	if _, err := producer.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}

	_ = follower.SetReadDeadline(time.Now().Add(20 * time.Second))
	var buf []byte
	record, err := readFloorFrame(bufio.NewReader(follower), &buf)
	if err != nil {
		t.Fatalf("the follower's parked fetch got no record: %v", err)
	}
	if len(record) < floorMinRecordSize || binary.BigEndian.Uint64(record) != 0 || !bytes.Equal(record[8:], req.Topics[0].Partitions[0].Records) {
		t.Fatalf("the follower got %x, want offset 0 and the produced batch", record)
	}
	// The leader decides to answer under its lock before it hands the record out.
	l.mu.Lock()
	answered := l.answered
	l.mu.Unlock()
	if answered != 0 {
		t.Fatalf("the leader answered %d records before the follower fetched past the first", answered)
	}
	_ = producer.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) // a bounded look for an answer that must not come
	if k, err := producer.Read(make([]byte, 64)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the producer read %d bytes (%v) before the follower fetched past the record", k, err)
	}
	if _, err := follower.Write(floorOffsetFrame(1)); err != nil {
		t.Fatal(err)
	}
	_ = producer.SetReadDeadline(time.Now().Add(20 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(producer, size[:]); err != nil {
		t.Fatalf("no answer after the follower's next fetch: %v", err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(producer, frame); err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = req.Version
	if binary.BigEndian.Uint32(frame) != 1 || resp.ReadFrom(frame[4:]) != nil ||
		len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("answer %x", frame)
	}
}

// cannedProduceRequest is an acks=all Produce of records to partition 0 of the canned
// topic.
func cannedProduceRequest(records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = ceilingTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
