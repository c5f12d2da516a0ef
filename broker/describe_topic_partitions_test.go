package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type describedTP struct {
	topic     string
	partition int32
}

// describeAll pages through DescribeTopicPartitions over the wire with limit
// partitions per answer and returns every partition in order and the pages taken.
func describeAll(t *testing.T, b *Broker, topics []string, limit int32) (got []describedTP, pages int) {
	t.Helper()
	cl := newClient(t, b)
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for pages = 1; ; pages++ {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range topics {
			req.Topics = append(req.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
		}
		req.ResponsePartitionLimit, req.Cursor = limit, cursor
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rt := range resp.Topics {
			if rt.ErrorCode != 0 {
				t.Fatalf("topic %v: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
			}
			for _, p := range rt.Partitions {
				if p.EligibleLeaderReplicas == nil || p.LastKnownELR == nil || !slices.Equal(p.ISR, []int32{0}) || p.LeaderID != 0 {
					t.Fatalf("%s-%d: %+v", *rt.Topic, p.Partition, p)
				}
				got = append(got, describedTP{*rt.Topic, p.Partition})
				n++
			}
		}
		if n > int(limit) {
			t.Fatalf("page %d: %d partitions over the limit %d", pages, n, limit)
		}
		if resp.NextCursor == nil {
			return got, pages
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}

// DescribeTopicPartitions pages by ResponsePartitionLimit with a cursor across topics,
// all topics in name order when none is named, and every partition exactly once.
func TestDescribeTopicPartitions_Paging(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, "b-topic", 3, nil)
	mustCreateTopic(t, adm, "a-topic", 4, nil)
	var want []describedTP
	for _, tc := range []struct {
		name string
		n    int32
	}{{"a-topic", 4}, {"b-topic", 3}} {
		for p := range tc.n {
			want = append(want, describedTP{tc.name, p})
		}
	}
	for _, limit := range []int32{1, 2, 3, 4, 7, 2000} {
		got, pages := describeAll(t, b, nil, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: got %v, want %v", limit, got, want)
		}
		if wantPages := (len(want) + int(limit) - 1) / int(limit); pages != wantPages {
			t.Fatalf("limit %d: %d pages, want %d", limit, pages, wantPages)
		}
	}
	// Named topics: the same, in name order, duplicates once.
	if got, _ := describeAll(t, b, []string{"b-topic", "a-topic", "b-topic"}, 3); !slices.Equal(got, want) {
		t.Fatalf("named: got %v", got)
	}
	// A cursor on a topic not named is INVALID_REQUEST; an unknown topic is
	// UNKNOWN_TOPIC_OR_PARTITION.
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "a-topic"}, {Topic: "nope"}}
	resp, err := req.RequestWith(testContext(t), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 2 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || len(resp.Topics[0].Partitions) != 4 {
		t.Fatalf("unknown topic: %+v", resp.Topics)
	}
	req.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "b-topic"}
	resp, err = req.RequestWith(testContext(t), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		if rt.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("cursor outside the topics: %+v", resp.Topics)
		}
	}
}

// Authorization as Kafka's: DESCRIBE on the topic; unnamed topics the principal may not
// describe are left out, named ones answered TOPIC_AUTHORIZATION_FAILED.
func TestDescribeTopicPartitions_Authorization(t *testing.T) {
	b := authzBroker(t) // alice may Read (so Describe) topic t, not u
	all := kmsg.NewPtrDescribeTopicPartitionsRequest()
	testwait.Until(t, 10*time.Second, "alice's ACLs apply", func() bool {
		return b.checks(as("User:alice", all)).Allowed(auth.OpDescribe, auth.ResourceTopic, "t")
	})
	resp := b.describeTopicPartitions(as("User:alice", all))
	if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "t" || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("all topics as alice: %+v", resp.Topics)
	}
	named := kmsg.NewPtrDescribeTopicPartitionsRequest()
	named.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}, {Topic: "u"}}
	resp = b.describeTopicPartitions(as("User:alice", named))
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("named as alice: %+v", resp.Topics)
	}
}
