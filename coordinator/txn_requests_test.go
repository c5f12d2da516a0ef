package coordinator

import (
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID takes its producer id from nextID once the shard's write is
// replicated; a transactional id whose partition is not served here gets
// NOT_COORDINATOR with producer id and epoch -1.
func TestInitProducerIDOnTheIDsShard(t *testing.T) {
	tc := NewTxnCoordinator(TxnConfig{Txn: txn.DefaultConfig(), Partitions: func() int32 { return 2 }})
	t.Cleanup(tc.Close)
	served := txn.PartitionFor("here", 2)
	log := newFakeLog(1)
	log.set(func(f *fakeLog) { f.autoCommit = true })
	tc.Reconcile(map[int32]int32{served: 1}, func(int32) (LoadSpec, bool) { return LoadSpec{Log: log}, true })
	testwait.Until(t, 10*time.Second, "serving", func() bool { return len(tc.Serving()) == 1 })
	away := "a0"
	for i := 0; txn.PartitionFor(away, 2) == served; i++ {
		away = string(rune('a'+i)) + "x"
	}
	init := func(id string) *kmsg.InitProducerIDResponse {
		r := kmsg.NewPtrInitProducerIDRequest()
		r.Version, r.TransactionalID, r.TransactionTimeoutMillis = 4, &id, 60000
		r.ProducerID, r.ProducerEpoch = -1, -1
		ch := make(chan kmsg.Response, 1)
		tc.InitProducerID(r, func() (int64, bool) { return 7, true }, func(resp kmsg.Response) { ch <- resp })
		return recvResponse(t, ch).(*kmsg.InitProducerIDResponse)
	}
	if resp := init("here"); resp.ErrorCode != 0 || resp.ProducerID != 7 || resp.ProducerEpoch != 0 {
		t.Fatalf("served: %+v", resp)
	}
	if resp := init(away); resp.ErrorCode != kerr.NotCoordinator.Code || resp.ProducerID != -1 || resp.ProducerEpoch != -1 {
		t.Fatalf("not served: %+v", resp)
	}
}
