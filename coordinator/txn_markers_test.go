package coordinator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeNet is a cluster for the marker writer: leaders by partition, and the code each
// leader answers for a partition (or an error for the whole request).
type fakeNet struct {
	mu      sync.Mutex
	leaders map[txn.TopicPartition]int32
	codes   map[txn.TopicPartition]int16
	down    map[int32]bool
	sent    map[int32][]string // leader → "topic/partition" asked, in order
	// versions are the requests' version and markers' TransactionVersion, in order.
	versions []string
}

func (n *fakeNet) LeaderOf(topic string, partition int32) (int32, bool) {
	l, ok := n.leaders[txn.TopicPartition{Topic: topic, Partition: partition}]
	return l, ok
}

func (n *fakeNet) WriteTxnMarkers(leader int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down[leader] {
		return nil, errors.New("connection refused")
	}
	resp := kmsg.NewPtrWriteTxnMarkersResponse()
	for _, m := range req.Markers {
		n.versions = append(n.versions, fmt.Sprintf("v%d tv%d", req.Version, m.TransactionVersion))
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			for _, p := range mt.Partitions {
				n.sent[leader] = append(n.sent[leader], fmt.Sprintf("%s/%d", mt.Topic, p))
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, n.codes[txn.TopicPartition{Topic: mt.Topic, Partition: p}]
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

func (n *fakeNet) Go(_ string, fn func(stop <-chan struct{})) { go fn(make(chan struct{})) }

// One round of markers goes to each partition's leader in one request per leader;
// deleted partitions are done, leaderless ones, refused ones and those of an
// unreachable leader are retried, fenced ones are done.
func TestSendMarkersGroupsByLeaderAndRetriesFailures(t *testing.T) {
	tp := func(topic string, p int32) txn.TopicPartition { return txn.TopicPartition{Topic: topic, Partition: p} }
	net := &fakeNet{
		leaders: map[txn.TopicPartition]int32{tp("a", 0): 1, tp("a", 1): 1, tp("b", 0): 2, tp("c", 0): -1, tp("d", 0): 3},
		codes:   map[txn.TopicPartition]int16{tp("a", 1): kerr.NotLeaderForPartition.Code, tp("b", 0): kerr.ProducerFenced.Code},
		down:    map[int32]bool{3: true},
		sent:    map[int32][]string{},
	}
	tc := NewTxnCoordinator(TxnConfig{Txn: txn.DefaultConfig(), Partitions: func() int32 { return 1 }, Net: net})
	t.Cleanup(tc.Close)
	m := &txn.Markers{ProducerID: 7, ProducerEpoch: 1, Commit: true,
		Partitions: []txn.TopicPartition{tp("a", 0), tp("a", 1), tp("b", 0), tp("c", 0), tp("d", 0), tp("gone", 0)}}
	retry := tc.sendMarkers(m, m.Partitions)
	slices.SortFunc(retry, func(x, y txn.TopicPartition) int {
		return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
	})
	if fmt.Sprint(retry) != "[{a 1} {c 0} {d 0}]" {
		t.Fatalf("retry %v", retry)
	}
	if fmt.Sprint(net.sent) != "map[1:[a/0 a/1] 2:[b/0]]" {
		t.Fatalf("sent %v", net.sent)
	}
}

// A Transactions V2 transaction's markers go as WriteTxnMarkers v2 with
// TransactionVersion 2 (KIP-1228: the leader checks their epoch strictly); TV1 markers
// stay at v1, which brokers without v2 still take.
func TestSendMarkersVersionByTransactionVersion(t *testing.T) {
	tp := txn.TopicPartition{Topic: "a", Partition: 0}
	net := &fakeNet{leaders: map[txn.TopicPartition]int32{tp: 1}, sent: map[int32][]string{}}
	tc := NewTxnCoordinator(TxnConfig{Txn: txn.DefaultConfig(), Partitions: func() int32 { return 1 }, Net: net})
	t.Cleanup(tc.Close)
	for _, tv := range []int8{2, 0} {
		m := &txn.Markers{ProducerID: 7, ProducerEpoch: 1, Commit: true, TransactionVersion: tv, Partitions: []txn.TopicPartition{tp}}
		if retry := tc.sendMarkers(m, m.Partitions); len(retry) != 0 {
			t.Fatalf("retry %v", retry)
		}
	}
	if got := strings.Join(net.versions, ", "); got != "v2 tv2, v1 tv0" {
		t.Fatalf("requests sent: %s, want v2 tv2, v1 tv0", got)
	}
}

func TestMarkerDoneCodes(t *testing.T) {
	for code, want := range map[int16]bool{
		0:                                      true,
		kerr.InvalidProducerEpoch.Code:         true,
		kerr.ProducerFenced.Code:               true,
		kerr.TransactionCoordinatorFenced.Code: true,
		kerr.NotLeaderForPartition.Code:        false,
		kerr.UnknownTopicOrPartition.Code:      false,
		kerr.NotEnoughReplicasAfterAppend.Code: false,
	} {
		if MarkerDone(code) != want {
			t.Errorf("MarkerDone(%s) = %v", kerr.ErrorForCode(code), !want)
		}
	}
}

// TestTopicRuns: consecutive partitions of a topic share one entry, in order; a topic
// seen again after another starts a new entry, as the requests were built before.
func TestTopicRuns(t *testing.T) {
	tps := []txn.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 2},
		{Topic: "b", Partition: 1}, {Topic: "a", Partition: 5}}
	var got []string
	for topic, partitions := range topicRuns(tps) {
		got = append(got, fmt.Sprint(topic, partitions))
	}
	if want := []string{"a[0 2]", "b[1]", "a[5]"}; !slices.Equal(got, want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
}
