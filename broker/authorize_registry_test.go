package broker

import (
	"errors"
	"reflect"
	"testing"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterActionAPIs are the broker-to-broker and controller APIs: CLUSTER_ACTION on the
// cluster, as in Kafka (AddRaftVoter: ALTER).
var clusterActionAPIs = map[kmsg.Key]bool{
	kmsg.BrokerRegistration: true, kmsg.BrokerHeartbeat: true, kmsg.AlterPartition: true,
	kmsg.AllocateProducerIDs: true, kmsg.AssignReplicasToDirs: true, kmsg.AddRaftVoter: true,
	kmsg.WriteTxnMarkers: true, kmsg.UnregisterBroker: true, kmsg.RemoveRaftVoter: true,
	kmsg.Key(remoteLogSegmentsKey): true,
}

// TestAuthorize_EveryAPIHasARule walks every API the registry serves: each has an
// authorization rule, the hook its file sets in its init (apiOpts.authorize; none falls
// through to the refusal for APIs without one), a super user passes every one, and the
// broker-to-broker and controller APIs refuse an ordinary user with
// CLUSTER_AUTHORIZATION_FAILED (alice took a broker's partitions offline with
// AssignReplicasToDirs, which had no rule). A new API cannot be added unguarded.
func TestAuthorize_EveryAPIHasARule(t *testing.T) {
	b := authzBroker(t)
	seen := map[kmsg.Key]bool{}
	for _, a := range apis {
		seen[a.key] = true
		if a.authorize == nil {
			t.Fatalf("%s is registered without an authorization rule (apiOpts.authorize)", a.key.Name())
		}
		for v := a.min; v <= a.max; v++ {
			body := rpc.RequestForKey(int16(a.key))
			body.SetVersion(v)
			if d := b.checkRequest(as("User:admin", body)); d.answer != nil || d.close != nil {
				t.Fatalf("%s v%d from a super user was refused: %+v", a.key.Name(), v, d)
			}
			body = rpc.RequestForKey(int16(a.key))
			body.SetVersion(v)
			req := as("User:alice", body)
			d := b.checkRequest(req)
			if errors.Is(d.close, errNoAuthorizationRule) {
				t.Fatalf("%s v%d has no authorization rule", a.key.Name(), v)
			}
			if !clusterActionAPIs[a.key] {
				continue
			}
			if d.answer == nil {
				t.Fatalf("%s v%d from alice was let through", a.key.Name(), v)
			}
			if code := topErrorCode(d.answer); code != kerr.ClusterAuthorizationFailed.Code && a.key != kmsg.WriteTxnMarkers {
				t.Fatalf("%s v%d from alice: error %v, want CLUSTER_AUTHORIZATION_FAILED", a.key.Name(), v, kerr.ErrorForCode(code))
			}
		}
	}
	for key := range clusterActionAPIs {
		if !seen[key] {
			t.Errorf("%s is not served any more: update clusterActionAPIs", key.Name())
		}
	}
	// Replica reads need CLUSTER_ACTION too: a fetch and an OffsetForLeaderEpoch with a
	// replica id.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID = 12, 0
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	// (Kafka answers an unauthorized follower's partitions TOPIC_AUTHORIZATION_FAILED.)
	fresp := decide(b, as("User:alice", fetch), kmsg.NewPtrFetchResponse()).(*kmsg.FetchResponse)
	if len(fetch.Topics) != 0 || len(fresp.Topics) != 1 || fresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice's replica fetch: request keeps %d topics, answer %+v", len(fetch.Topics), fresp.Topics)
	}
	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	epochs.Version, epochs.ReplicaID = 3, 0
	et := kmsg.NewOffsetForLeaderEpochRequestTopic()
	et.Topic = "t"
	et.Partitions = append(et.Partitions, kmsg.NewOffsetForLeaderEpochRequestTopicPartition())
	epochs.Topics = append(epochs.Topics, et)
	resp := decide(b, as("User:alice", epochs), kmsg.NewPtrOffsetForLeaderEpochResponse()).(*kmsg.OffsetForLeaderEpochResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code && resp.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice's follower OffsetForLeaderEpoch: %+v", resp.Topics)
	}
}

// topErrorCode is a response's top-level ErrorCode field, or 0.
func topErrorCode(resp kmsg.Response) int16 {
	v := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !v.IsValid() {
		return 0
	}
	return int16(v.Int())
}
