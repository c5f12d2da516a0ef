package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduce_RecordErrorsNameTheRecords: a batch with keyless records sent to a
// compacted topic is INVALID_RECORD, and from Produce v8 the answer names each record
// at fault (KIP-467's record_errors, batch index and message) with Kafka's top-level
// message, so a producer can fail those and deliver the others; before v8 only the
// partition's error.
func TestProduce_RecordErrorsNameTheRecords(t *testing.T) {
	b := startTestBroker(t, "", nil)
	mustCreateTopic(t, newAdmin(t, b), "c", 1, map[string]*string{"cleanup.policy": strp("compact")})
	var raw []byte
	keyless := map[int32]bool{2: true, 5: true}
	for i := int32(0); i < 10; i++ {
		rec := kmsg.Record{OffsetDelta: i, Key: []byte{byte('a' + i)}, Value: []byte("v")}
		if keyless[i] {
			rec.Key = nil
		}
		body := rec.AppendTo(nil)
		rec.Length = int32(len(body) - 1)
		raw = rec.AppendTo(raw)
	}
	for _, v := range []int16{7, 8, 9} {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = v, -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "c"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rvBatch(raw, 10, 0)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(testContext(t), newClient(t, b))
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		if sp.ErrorCode != kerr.InvalidRecord.Code {
			t.Fatalf("v%d: %v, want INVALID_RECORD", v, kerr.ErrorForCode(sp.ErrorCode))
		}
		if v < 8 {
			continue
		}
		if sp.ErrorMessage == nil || !strings.Contains(*sp.ErrorMessage, "One or more records have been rejected") {
			t.Errorf("v%d: error message %v", v, sp.ErrorMessage)
		}
		var got []int32
		for _, e := range sp.ErrorRecords {
			got = append(got, e.RelativeOffset)
			if e.ErrorMessage == nil || !strings.Contains(*e.ErrorMessage, "Compacted topic cannot accept message without key in topic partition c-0") {
				t.Errorf("v%d: record %d's message %v", v, e.RelativeOffset, e.ErrorMessage)
			}
		}
		if len(got) != 2 || got[0] != 2 || got[1] != 5 {
			t.Errorf("v%d: record errors name %v, want [2 5]", v, got)
		}
	}
}
