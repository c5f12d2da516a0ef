package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionOverTheWire drives one session through a broker over TCP: the full
// fetch gets a session and every partition, an incremental fetch that only moved a
// fetch offset gets no partition, a parked incremental fetch is woken by an append to
// one partition of its session and names that one alone (its record set sent by
// sendfile), a forgotten partition is no longer read, a repeated epoch is
// INVALID_FETCH_SESSION_EPOCH, and epoch -1 closes the session. Every frame is
// exactly kmsg's encoding of the response it decodes to.
func TestFetchSessionOverTheWire(t *testing.T) {
	b := startTestBroker(t, "", nil)
	const topic = "sessions"
	mustCreateTopic(t, newAdmin(t, b), topic, 3, nil)
	prod := newClient(t, b, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(partition int32) {
		value := make([]byte, 80<<10)
		rand.Read(value)
		if err := prod.ProduceSync(testContext(t), &kgo.Record{Value: value, Partition: partition}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0)
	c, err := net.DialTimeout("tcp", b.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("session-test"))
	corr := int32(0)
	send := func(req *kmsg.FetchRequest) {
		corr++
		c.SetDeadline(time.Now().Add(20 * time.Second))
		if _, err := c.Write(formatter.AppendRequest(nil, req, corr)); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() *kmsg.FetchResponse {
		frame := readFrame(t, c)
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = 12
		if err := resp.ReadFrom(frame[9:]); err != nil { // size, correlation id, header tags
			t.Fatal(err)
		}
		enc := resp.AppendTo(append(append([]byte(nil), frame[4:8]...), 0))
		if want := append(binary.BigEndian.AppendUint32(nil, uint32(len(enc))), enc...); !bytes.Equal(frame, want) {
			at := 0
			for at < min(len(frame), len(want)) && frame[at] == want[at] {
				at++
			}
			t.Fatalf("frame of %d bytes differs from kmsg's %d at %d", len(frame), len(want), at)
		}
		return resp
	}
	fetch := func(id, epoch int32, wait int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, wait, 1, 1<<30
		req.SessionID, req.SessionEpoch = id, epoch
		if len(offsets) > 0 {
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = topic
			for _, p := range slices.Sorted(maps.Keys(offsets)) {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, offsets[p], 1<<20, -1
				ft.Partitions = append(ft.Partitions, fp)
			}
			req.Topics = append(req.Topics, ft)
		}
		if len(forget) > 0 {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.Partitions = topic, forget
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		send(req)
		return receive()
	}
	names := func(resp *kmsg.FetchResponse) []int32 {
		var out []int32
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				out = append(out, p.Partition)
			}
		}
		return out
	}

	full := fetch(0, 0, 0, map[int32]int64{0: 0, 1: 0, 2: 0})
	id := full.SessionID
	if id == 0 || full.ErrorCode != 0 || !slices.Equal(names(full), []int32{0, 1, 2}) || len(full.Topics[0].Partitions[0].RecordBatches) < 80<<10 {
		t.Fatalf("full fetch: session %d, error %d, partitions %v", id, full.ErrorCode, names(full))
	}
	if inc := fetch(id, 1, 0, map[int32]int64{0: 1}); inc.SessionID != id || inc.ErrorCode != 0 || len(names(inc)) != 0 {
		t.Fatalf("incremental after consuming: session %d, error %d, partitions %v; want none", inc.SessionID, inc.ErrorCode, names(inc))
	}
	// Parked: the append to partition 2 wakes it.
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 12, -1, 15000, 1, 1<<30
	req.SessionID, req.SessionEpoch = id, 2
	send(req)
	produce(2)
	woken := receive()
	if woken.ErrorCode != 0 || !slices.Equal(names(woken), []int32{2}) || len(woken.Topics[0].Partitions[0].RecordBatches) < 80<<10 {
		t.Fatalf("parked incremental fetch: error %d, partitions %v; want partition 2 with its records", woken.ErrorCode, names(woken))
	}
	// Partition 1 forgotten, partition 2 consumed: a new append to 1 is not read.
	produce(1)
	if inc := fetch(id, 3, 0, map[int32]int64{2: 1}, 1); inc.ErrorCode != 0 || len(names(inc)) != 0 {
		t.Fatalf("after forgetting partition 1: error %d, partitions %v; want none", inc.ErrorCode, names(inc))
	}
	if dup := fetch(id, 3, 0, nil); dup.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("epoch 3 again: error %d, want INVALID_FETCH_SESSION_EPOCH", dup.ErrorCode)
	}
	if closed := fetch(id, -1, 0, map[int32]int64{1: 0}); closed.SessionID != 0 || !slices.Equal(names(closed), []int32{1}) {
		t.Fatalf("closing fetch: session %d, partitions %v", closed.SessionID, names(closed))
	}
	if gone := fetch(id, 4, 0, nil); gone.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("closed session: error %d, want FETCH_SESSION_ID_NOT_FOUND", gone.ErrorCode)
	}
}
