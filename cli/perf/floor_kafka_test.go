package perf

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
	// A floor leader with --kafka in this process and one follower played by the test:
	// the producer's record reaches the follower's parked fetch, and its answer waits
	// for the follower's next fetch.
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

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafka.addr()), kgo.MaxBufferedRecords(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	produced := make(chan error, 1)
	cl.Produce(ctx, &kgo.Record{Topic: ceilingTopic, Value: []byte("a record of the floor")}, func(_ *kgo.Record, err error) { produced <- err })

	_ = follower.SetReadDeadline(time.Now().Add(20 * time.Second))
	var buf []byte
	record, err := readFloorFrame(bufio.NewReader(follower), &buf)
	if err != nil {
		t.Fatalf("the follower's parked fetch got no record: %v", err)
	}
	if len(record) < floorMinRecordSize || binary.BigEndian.Uint64(record) != 0 {
		t.Fatalf("the follower got %x, want the record at offset 0", record)
	}
	// The leader decides to answer under its lock before it hands the record out, so
	// by now an answer that does not wait for the follower would be counted.
	l.mu.Lock()
	answered := l.answered
	l.mu.Unlock()
	select {
	case err := <-produced:
		t.Fatalf("the produce was answered (%v) before the follower fetched past the record", err)
	default:
		if answered != 0 {
			t.Fatalf("the leader answered %d records before the follower fetched past the first", answered)
		}
	}
	if _, err := follower.Write(floorOffsetFrame(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-produced:
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the produce was not answered after the follower's next fetch")
	}
}
