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
