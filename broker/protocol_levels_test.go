package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ListOffsets v10 answers earliest local (-4) as the log start, there being no tiered
// storage, and latest tiered (-5) as offset -1, as a Kafka without remote storage;
// Metadata v13 carries its top-level error code, 0.
func TestListOffsetsV10AndMetadataV13(t *testing.T) {
	b := startTestBroker(t, "", nil)
	ctx := testContext(t)
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, "lo10", 1, nil)
	cl := newClient(t, b, kgo.DefaultProduceTopic("lo10"))
	for range 3 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "lo10", Partition: 0, At: 1})
	if resps, err := adm.DeleteRecords(ctx, offsets); err != nil || resps.Error() != nil {
		t.Fatal(err, resps.Error())
	}
	for ts, want := range map[int64]int64{-4: 1, -5: -1, -2: 1, -1: 3} {
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo10"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = ts
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if resp.Version != 10 || p.ErrorCode != 0 || p.Offset != want {
			t.Fatalf("v%d timestamp %d: offset %d code %d, want %d", resp.Version, ts, p.Offset, p.ErrorCode, want)
		}
		if ts == -5 && (p.Timestamp != -1 || p.LeaderEpoch != -1) {
			t.Fatalf("latest tiered: %+v", p)
		}
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if md.Version != 13 || md.ErrorCode != 0 || len(md.Brokers) != 1 {
		t.Fatalf("Metadata v%d: error %d, %d brokers", md.Version, md.ErrorCode, len(md.Brokers))
	}
}
