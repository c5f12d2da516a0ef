package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A marker from a coordinator epoch older than the producer's last marker in the
// partition is TRANSACTION_COORDINATOR_FENCED, and the coordinator counts it as done.
func TestWriteTxnMarkersCoordinatorFenced(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "markers", 1, nil)
	write := func(coordinatorEpoch int32, commit bool) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = 1
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = 77, 0, commit, coordinatorEpoch
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "markers", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return b.writeTxnMarkers(testContext(t), req).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	testwait.For(t, 20*time.Second, func() error {
		if code := write(5, true); code != 0 {
			return fmt.Errorf("marker of coordinator epoch 5: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	if code := write(4, false); code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("marker of coordinator epoch 4: %v", kerr.ErrorForCode(code))
	}
	if !coordinator.MarkerDone(kerr.TransactionCoordinatorFenced.Code) {
		t.Fatal("a fenced marker would be retried")
	}
	if code := write(6, false); code != 0 {
		t.Fatalf("marker of coordinator epoch 6: %v", kerr.ErrorForCode(code))
	}
}

// WriteTxnMarkers v2 (KIP-1228): a marker of TransactionVersion 2 must carry an epoch
// newer than the producer's in the partition (a TV2 coordinator bumps it before every
// end), so a duplicate at the same epoch is INVALID_PRODUCER_EPOCH, which the
// coordinator counts as written; TransactionVersion 0 keeps the old rule (at least the
// producer's epoch), and v1 requests behave as before.
func TestWriteTxnMarkersV2StrictEpoch(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "markers2", 1, nil)
	cl := newClient(t, b)
	write := func(version int16, tv int8, epoch int16) int16 {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Version = version
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = 88, epoch, true, 1, tv
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "markers2", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(testContext(t), cl) // over the wire: v2's field decoded
		if err != nil {
			t.Fatalf("WriteTxnMarkers v%d: %v", version, err)
		}
		return resp.Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	testwait.For(t, 20*time.Second, func() error {
		if code := write(2, 2, 3); code != 0 {
			return fmt.Errorf("TV2 marker of epoch 3: %v", kerr.ErrorForCode(code))
		}
		return nil
	})
	if code := write(2, 2, 3); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TV2 marker again at epoch 3: %v, want INVALID_PRODUCER_EPOCH", kerr.ErrorForCode(code))
	}
	if !coordinator.MarkerDone(kerr.InvalidProducerEpoch.Code) {
		t.Fatal("a duplicate TV2 marker would be retried forever")
	}
	if code := write(2, 0, 3); code != 0 {
		t.Fatalf("TV0 marker at the same epoch 3: %v, want accepted", kerr.ErrorForCode(code))
	}
	if code := write(1, 0, 3); code != 0 {
		t.Fatalf("v1 marker at the same epoch 3: %v, want accepted", kerr.ErrorForCode(code))
	}
	if code := write(2, 2, 2); code != kerr.InvalidProducerEpoch.Code {
		t.Fatalf("TV2 marker of an older epoch 2: %v", kerr.ErrorForCode(code))
	}
	if code := write(2, 2, 4); code != 0 {
		t.Fatalf("TV2 marker of the next epoch 4: %v", kerr.ErrorForCode(code))
	}
}
