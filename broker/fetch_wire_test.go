package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/rpc"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchWireFrameIsKmsgEncoding fetches over TCP (record sets of 64 KiB and more
// leave by sendfile) from a broker holding incompressible batches in several
// partitions, one of them empty, plus a partition that does not exist, at v4, v11 and
// v12, with limits that cut the answer: every frame received is exactly kmsg's encoding
// of the response it decodes to, and the records are the ones produced.
func TestFetchWireFrameIsKmsgEncoding(t *testing.T) {
	b := startTestBroker(t, "", nil)
	const topic = "wire"
	mustCreateTopic(t, newAdmin(t, b), topic, 3, nil)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.ProducerBatchMaxBytes(200<<10), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	value := make([]byte, 100<<10)
	for i := range 12 {
		rand.Read(value)
		r := &kgo.Record{Value: bytes.Clone(value), Partition: int32(i % 2)} // partition 2 stays empty
		if err := prod.ProduceSync(testContext(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := net.DialTimeout("tcp", b.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("wire-test"))
	for _, v := range []int16{4, 11, 12} {
		for _, limits := range [][2]int32{{1 << 30, 1 << 30}, {350 << 10, 1 << 30}, {1 << 30, 250 << 10}, {1, 1}} {
			req := kmsg.NewPtrFetchRequest()
			req.Version = v
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes = -1, 0, 1
			req.MaxBytes = limits[1]
			req.SessionEpoch = -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = topic
			for _, p := range []int32{0, 1, 2, 7} {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 1, limits[0], -1
				ft.Partitions = append(ft.Partitions, fp)
			}
			req.Topics = append(req.Topics, ft)
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write(formatter.AppendRequest(nil, req, int32(v))); err != nil {
				t.Fatal(err)
			}
			frame := readFrame(t, c)
			resp := kmsg.NewPtrFetchResponse()
			resp.Version = v
			body := frame[8:]
			if v >= 12 {
				body = body[1:] // response header v1: empty tag buffer
			}
			if err := resp.ReadFrom(body); err != nil {
				t.Fatalf("v%d: undecodable: %v", v, err)
			}
			// The frame kmsg writes for this response: size, correlation id, the v1
			// header's tag buffer, the body.
			enc := append([]byte(nil), frame[4:8]...)
			if v >= 12 {
				enc = append(enc, 0)
			}
			enc = resp.AppendTo(enc)
			want := append(binary.BigEndian.AppendUint32(nil, uint32(len(enc))), enc...)
			if !bytes.Equal(frame, want) {
				at := 0
				for at < min(len(frame), len(want)) && frame[at] == want[at] {
					at++
				}
				t.Fatalf("v%d limits %v: frame of %d bytes differs from kmsg's %d at %d", v, limits, len(frame), len(want), at)
			}
			ps := resp.Topics[0].Partitions
			if len(ps) != 4 || ps[3].ErrorCode == 0 || len(ps[2].RecordBatches) != 0 || len(ps[0].RecordBatches) < 100<<10 {
				t.Fatalf("v%d limits %v: unexpected answer %+v", v, limits, ps)
			}
		}
	}
}

// readFrame reads one response frame, size prefix included.
func readFrame(t *testing.T, c net.Conn) []byte {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	if _, err := io.ReadFull(c, frame[4:]); err != nil {
		t.Fatal(err)
	}
	return frame
}

// TestFetchAnswerOutlivesTopicDeletion reads a fetch answer (its record sets held in
// the segment files), then deletes the topic and waits until its directory is removed
// from disk: the answer still encodes the records it read, byte for byte.
func TestFetchAnswerOutlivesTopicDeletion(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, map[string]string{"log.segment.delete.delay.ms": "0"})
	const topic = "doomed"
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, topic, 1, nil)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic))
	value := make([]byte, 64<<10)
	rand.Read(value)
	if err := prod.ProduceSync(testContext(t), &kgo.Record{Value: value}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxBytes, req.SessionEpoch = 12, -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	answer, n, _ := b.fetches.Read(req, nil)
	defer answer.Release()
	if n < len(value) || answer.Held(0) == nil {
		t.Fatalf("read %d bytes, hold %v", n, answer.Held(0))
	}
	want := answer.AppendTo(nil) // kmsg's encoding, records read in
	if _, err := adm.DeleteTopics(testContext(t), topic); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		entries, err := os.ReadDir(filepath.Join(dir, "logs"))
		if err != nil {
			t.Fatal(err)
		}
		gone := true
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), topic) {
				gone = false
			}
		}
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic directory still on disk: %v", entries)
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	p := &rpc.Parts{}
	answer.AppendParts(p)
	got, err := p.AppendFlat(nil)
	if err != nil {
		t.Fatalf("held records unreadable after the topic was deleted: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("held answer changed after the topic was deleted")
	}
}
