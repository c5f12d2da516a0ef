package tiered

import "testing"

func TestObjectKeysFollowAivensLayout(t *testing.T) {
	md := sampleMetadata()
	md.SegmentID.TopicIDPartition.TopicID = Uuid{0x31, 0x62, 0x7a, 0x14, 0x74, 0xdf, 0x45, 0x8c, 0xba, 0xee, 0x3c, 0xf0, 0x65, 0xd7, 0xaa, 0x49}
	k := ObjectKeys{Prefix: "someprefix/"}
	want := "someprefix/orders-MWJ6FHTfRYy67jzwZdeqSQ/7/00000000000000001234-" + md.SegmentID.ID.String()
	if got := k.Log(md); got != want+".log" {
		t.Errorf("Log = %q, want %q", got, want+".log")
	}
	suffixes := map[IndexType]string{
		IndexOffset: ".index", IndexTimestamp: ".timeindex", IndexProducerSnapshot: ".snapshot",
		IndexTransaction: ".txnindex", IndexLeaderEpoch: ".leader-epoch-checkpoint",
	}
	for typ, suffix := range suffixes {
		if got := k.Index(md, typ); got != want+suffix {
			t.Errorf("Index(%v) = %q, want %q", typ, got, want+suffix)
		}
	}
	if got := len(k.All(md)); got != 6 {
		t.Errorf("All has %d keys, want 6", got)
	}
	if got, want := k.PartitionPrefix(md.SegmentID.TopicIDPartition), "someprefix/orders-MWJ6FHTfRYy67jzwZdeqSQ/7/"; got != want {
		t.Errorf("PartitionPrefix = %q, want %q", got, want)
	}
}
