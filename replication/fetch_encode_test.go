package replication

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// sectionsFile is a temporary file of random bytes standing in for a segment.
func sectionsFile(t testing.TB, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	f, err := os.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	return f, data
}

// encodeBoth encodes r twice: by kmsg with every section's bytes put in its
// partition's RecordBatches (today's encoding), and by appendFetchParts with the
// sections read in place (what the receiver gets).
func encodeBoth(t testing.TB, r *kmsg.FetchResponse, secs []rpc.FileSection) (want, got []byte) {
	t.Helper()
	c := *r
	c.Topics = make([]kmsg.FetchResponseTopic, len(r.Topics))
	i := 0
	for ti, tp := range r.Topics {
		c.Topics[ti] = tp
		c.Topics[ti].Partitions = append([]kmsg.FetchResponseTopicPartition(nil), tp.Partitions...)
		for pi := range tp.Partitions {
			if i < len(secs) && secs[i].Size > 0 {
				b := make([]byte, secs[i].Size)
				if _, err := secs[i].File.ReadAt(b, secs[i].Offset); err != nil {
					t.Fatal(err)
				}
				c.Topics[ti].Partitions[pi].RecordBatches = b
			}
			i++
		}
	}
	want = c.AppendTo(nil)
	p := &rpc.Parts{}
	appendFetchParts(p, r, func(i int) rpc.FileSection {
		if i < len(secs) {
			return secs[i]
		}
		return rpc.FileSection{}
	})
	got, err := p.AppendFlat(nil)
	if err != nil {
		t.Fatal(err)
	}
	return want, got
}

// fetchCase builds a response at version v with topics x partitions partitions of
// every kind: whole and partial (cut inside a batch, as Kafka may return at maxBytes)
// file sections, inline records, empty and null record sets, error partitions,
// aborted transactions (null, empty, some) and, from v12, the tagged fields.
func fetchCase(v int16, topics, partitions int, f *os.File, size int) (*kmsg.FetchResponse, []rpc.FileSection) {
	r := kmsg.NewPtrFetchResponse()
	r.Version = v
	r.ThrottleMillis, r.ErrorCode, r.SessionID = 7, 0, 0
	var secs []rpc.FileSection
	n := 0
	for ti := range topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic = fmt.Sprintf("topic-%d-%s", ti, string(bytes.Repeat([]byte{'x'}, ti*70)))
		st.TopicID = [16]byte{byte(ti + 1), 0xfe, 15: byte(ti)}
		for pi := range partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = int32(pi)
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = int64(1000+pi), int64(990+pi), int64(pi)
			sp.RecordBatches = []byte{}
			var sec rpc.FileSection
			switch n % 8 {
			case 0: // a whole range
				sec = rpc.FileSection{File: f, Offset: int64(n*131) % int64(size/2), Size: int64(size / 4)}
			case 1: // a partial trailing batch: an arbitrary cut
				sec = rpc.FileSection{File: f, Offset: 13, Size: int64(n%5000 + 1)}
			case 2:
				sp.RecordBatches = []byte("inline-record-bytes")
			case 3:
				sp.RecordBatches = nil
			case 4:
				sp.ErrorCode = 6
				sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			case 5:
				sp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				sec = rpc.FileSection{File: f, Offset: 0, Size: 200}
			case 6:
				for k := range 2 {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = int64(k+40), int64(k*10)
					sp.AbortedTransactions = append(sp.AbortedTransactions, at)
				}
				sec = rpc.FileSection{File: f, Offset: 1, Size: 1}
			case 7:
				sp.PreferredReadReplica = 2
			}
			if v >= 12 {
				switch n % 5 {
				case 1:
					sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = 3, 500
				case 2:
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = 1, 9
				case 3:
					sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch = 77, 2
				case 4:
					sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = 3, 500
					sp.SnapshotID.EndOffset, sp.SnapshotID.Epoch = 77, 2
				}
			}
			st.Partitions = append(st.Partitions, sp)
			secs = append(secs, sec)
			n++
		}
		r.Topics = append(r.Topics, st)
	}
	if v >= 16 && topics > 0 {
		rack := "rack-a"
		for i, r2 := range []*string{nil, &rack} {
			br := kmsg.NewFetchResponseBroker()
			br.NodeID, br.Host, br.Port, br.Rack = int32(i+1), fmt.Sprintf("broker-%d.example", i), int32(9092+i), r2
			r.Brokers = append(r.Brokers, br)
		}
	}
	return r, secs
}

// TestFetchPartsByteIdentical holds the bytes-plus-sections encoder to kmsg's encoding
// of the same response at every served version (v4, v11, v12, v13's topic ids, v16's
// NodeEndpoints among them), with many partitions, partial batches, empty, null and
// error partitions, aborted transactions and tagged fields, and with no topics at all.
func TestFetchPartsByteIdentical(t *testing.T) {
	const size = 256 << 10
	f, _ := sectionsFile(t, size)
	for v := int16(4); v <= 17; v++ {
		for _, shape := range [][2]int{{0, 0}, {1, 1}, {1, 0}, {3, 100}} {
			r, secs := fetchCase(v, shape[0], shape[1], f, size)
			if !fetchPartsEncodable(r) {
				t.Fatalf("v%d: case not encodable", v)
			}
			want, got := encodeBoth(t, r, secs)
			if !bytes.Equal(want, got) {
				t.Fatalf("v%d %v: %d bytes, kmsg %d bytes, first difference at %d", v, shape, len(got), len(want), firstDiff(want, got))
			}
		}
	}
	// A top-level error with its session id, as FETCH_SESSION_ID_NOT_FOUND is sent.
	r := kmsg.NewPtrFetchResponse()
	r.Version, r.ErrorCode, r.SessionID = 12, 70, 5
	if want, got := encodeBoth(t, r, nil); !bytes.Equal(want, got) {
		t.Fatal("top-level error response differs")
	}
}

// TestFetchPartsFallback: what the encoder does not write (unknown tags, Brokers below
// v16, versions past 17) is refused, so FetchAnswer falls back to kmsg with the records read in.
func TestFetchPartsFallback(t *testing.T) {
	r := kmsg.NewPtrFetchResponse()
	r.Version = 12
	r.UnknownTags.Set(99, []byte{1})
	if fetchPartsEncodable(r) {
		t.Fatal("unknown tags accepted")
	}
	r = kmsg.NewPtrFetchResponse()
	r.Version = 18
	if fetchPartsEncodable(r) {
		t.Fatal("v18 accepted")
	}
	r = kmsg.NewPtrFetchResponse()
	r.Version = 15
	r.Brokers = append(r.Brokers, kmsg.NewFetchResponseBroker())
	if fetchPartsEncodable(r) {
		t.Fatal("Brokers accepted below v16")
	}
	a := &FetchAnswer{FetchResponse: kmsg.NewPtrFetchResponse()}
	a.Version = 12
	a.UnknownTags.Set(99, []byte{1})
	p := &rpc.Parts{}
	a.AppendParts(p)
	if !bytes.Equal(p.B, a.FetchResponse.AppendTo(nil)) {
		t.Fatal("fallback differs from kmsg")
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
