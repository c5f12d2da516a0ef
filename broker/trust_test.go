package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBrokerClientIDIsNotTrusted: a client naming itself petrel-broker-9 is an ordinary
// client. It is throttled by the default client quota (it was exempt: throttle 0 ms
// instead of 1000), and an internal topic it creates gets Kafka's layout, not the
// cleanup.policy=delete, retention.ms=1000 it asked for; with the authorizer on, a
// principal allowed Create but not ClusterAction is no broker.
func TestBrokerClientIDIsNotTrusted(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"quota.window.num": "2", "transaction.state.log.num.partitions": "4"})
	ctx := testContext(t)
	mustCreateTopic(t, newAdmin(t, b), "q", 1, nil)
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	entry.Entity = append(entry.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: "client-id"}) // the default client id
	entry.Ops = append(entry.Ops, kmsg.AlterClientQuotasRequestEntryOp{Key: "producer_byte_rate", Value: 1024})
	alter.Entries = append(alter.Entries, entry)
	if resp, err := alter.RequestWith(ctx, newClient(t, b)); err != nil || resp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter quotas: %v %+v", err, resp)
	}
	impostor := newClient(t, b, kgo.ClientID(forwardedClientPrefix+"9"))
	throttled := false
	for i := 0; i < 20 && !throttled; i++ {
		produce := kmsg.NewPtrProduceRequest()
		produce.Acks, produce.TimeoutMillis = 1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "q"
		rp := kmsg.NewProduceRequestTopicPartition()
		rb := kmsg.RecordBatch{Magic: 2, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: 1,
			Records: (&kmsg.Record{Value: make([]byte, 16<<10)}).AppendTo(nil)}
		rp.Records = rb.AppendTo(nil)
		rt.Partitions = append(rt.Partitions, rp)
		produce.Topics = append(produce.Topics, rt)
		resp, err := produce.RequestWith(ctx, impostor)
		if err != nil {
			t.Fatal(err)
		}
		throttled = resp.ThrottleMillis > 0
	}
	if !throttled {
		t.Error("a client claiming a broker's client id is exempt from the default client quota")
	}

	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = transactionStateTopic, 1, 1
	for _, c := range [][2]string{{"cleanup.policy", "delete"}, {"retention.ms", "1000"}} {
		ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: c[0], Value: kmsg.StringPtr(c[1])})
	}
	create.Topics = append(create.Topics, ct)
	if _, err := create.RequestWith(ctx, impostor); err != nil {
		t.Fatal(err)
	}
	if topic := b.Image().Topic(transactionStateTopic); topic != nil {
		cfg := b.topicConfigsFor(b.Image(), transactionStateTopic)
		if len(topic.Partitions) != 4 || cfg["cleanup.policy"].Value != "compact" || cfg["retention.ms"].Value == "1000" {
			t.Errorf("the impostor created %s with %d partitions, cleanup.policy=%s, retention.ms=%s", transactionStateTopic,
				len(topic.Partitions), cfg["cleanup.policy"].Value, cfg["retention.ms"].Value)
		}
	}

	// With the authorizer on: Create on the cluster makes no broker.
	a := authzBroker(t)
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:carol", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeCluster,
		"kafka-cluster", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationCreate))
	for _, r := range a.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	req := as("User:carol", kmsg.NewPtrCreateTopicsRequest())
	req.ClientID = kmsg.StringPtr(forwardedClientPrefix + "9")
	if a.clusterPrincipal(req) {
		t.Error("carol, with Create on the cluster and a broker's client id, is taken for a broker")
	}
}
