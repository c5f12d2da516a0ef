package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMetadata_AutoCreateAnswersLeaderNotAvailable: the Metadata request that
// auto-creates a topic gets it LEADER_NOT_AVAILABLE with no partitions, as from Kafka
// (it was answered with its partitions at once); the next request finds them. Clients
// written against Kafka rely on it, after a delete among others.
func TestMetadata_AutoCreateAnswersLeaderNotAvailable(t *testing.T) {
	b := startTestBroker(t, "", nil)
	cl := newClient(t, b)
	meta := func() kmsg.MetadataResponseTopic {
		req := kmsg.NewPtrMetadataRequest()
		req.Version, req.AllowAutoTopicCreation = 12, true
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("auto")
		req.Topics = append(req.Topics, mt)
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0]
	}
	if first := meta(); first.ErrorCode != kerr.LeaderNotAvailable.Code || len(first.Partitions) != 0 {
		t.Fatalf("the creating request: %v with %d partitions, want LEADER_NOT_AVAILABLE and none", kerr.ErrorForCode(first.ErrorCode), len(first.Partitions))
	}
	if b.Image().Topic("auto") == nil {
		t.Fatal("the topic was not created")
	}
	if next := meta(); next.ErrorCode != 0 || len(next.Partitions) != 1 || next.Partitions[0].Leader != 0 {
		t.Fatalf("the next request: %v with %+v", kerr.ErrorForCode(next.ErrorCode), next.Partitions)
	}
}
