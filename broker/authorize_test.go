package broker

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const standardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// as is a request from principal at 10.0.0.1 with client id app.
func as(principal string, body kmsg.Request) *rpc.Request {
	return &rpc.Request{Key: body.Key(), Version: body.GetVersion(), Body: body, ClientID: kmsg.StringPtr("app"),
		Conn: &rpc.ConnInfo{Principal: principal, RemoteAddr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5000}, ListenerName: "PLAINTEXT"}}
}

func aclCreation(principal string, perm kmsg.ACLPermissionType, rt kmsg.ACLResourceType, name string, pattern kmsg.ACLResourcePatternType, op kmsg.ACLOperation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.Principal, c.Host, c.PermissionType, c.ResourceType, c.ResourceName, c.ResourcePatternType, c.Operation = principal, "*", perm, rt, name, pattern, op
	return c
}

// authzBroker is a one-node broker with authorization on, User:admin a super user (and
// User:ANONYMOUS, as its PLAINTEXT inter-broker listener needs), topics t and u, and
// alice allowed Read on t.
func authzBroker(t *testing.T) *Broker {
	b := startTestBroker(t, "", map[string]string{"authorizer.class.name": standardAuthorizer, "super.users": "User:admin;User:ANONYMOUS"})
	ctx := testContext(t)
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"t", "u"} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = name, 1, 1
		create.Topics = append(create.Topics, ct)
	}
	for _, rt := range b.createTopics(ctx, create).Topics {
		if rt.ErrorCode != 0 {
			t.Fatalf("create %s: %v", rt.Topic, kerr.ErrorForCode(rt.ErrorCode))
		}
	}
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead))
	for _, r := range b.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	return b
}

// decide runs checkRequest and applies its merge to resp (the handler's answer for
// what was let through); it returns the answer if checkRequest gave one.
func decide(b *Broker, req *rpc.Request, resp kmsg.Response) kmsg.Response {
	d := b.checkRequest(req)
	if d.answer != nil {
		return d.answer
	}
	if d.merge != nil {
		d.merge(resp)
	}
	return resp
}

func produceTo(topic string) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks = 9, -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	return req
}

// TestAuthorize_Principals acts as different principals on one broker: Read on a
// topic allows neither writing it nor seeing another topic; a super user and
// another broker pass everything; a follower fetch needs ClusterAction; joining a
// group needs Read on it.
func TestAuthorize_Principals(t *testing.T) {
	b := authzBroker(t)

	req := as("User:alice", produceTo("t"))
	resp := decide(b, req, kmsg.NewPtrProduceResponse()).(*kmsg.ProduceResponse)
	if len(req.Body.(*kmsg.ProduceRequest).Topics) != 0 || len(resp.Topics) != 1 ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice's produce to t: %+v", resp.Topics)
	}
	for _, principal := range []string{"User:admin"} {
		req := as(principal, produceTo("t"))
		if d := b.checkRequest(req); d.answer != nil || d.merge != nil || len(req.Body.(*kmsg.ProduceRequest).Topics) != 1 {
			t.Errorf("%s's produce was refused", principal)
		}
	}
	// A broker's client id gives no right: alice claiming one still may not write t.
	impostor := as("User:alice", produceTo("t"))
	impostor.ClientID = kmsg.StringPtr(forwardedClientPrefix + "1")
	if d := b.checkRequest(impostor); d.answer == nil && d.merge == nil {
		t.Error("alice claiming a broker's client id was trusted")
	}

	// Metadata for all topics shows alice only t.
	all := kmsg.NewPtrMetadataResponse()
	for _, name := range []string{"t", "u"} {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		all.Topics = append(all.Topics, mt)
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	got := decide(b, as("User:alice", meta), all).(*kmsg.MetadataResponse)
	if len(got.Topics) != 1 || *got.Topics[0].Topic != "t" {
		t.Errorf("alice's metadata for all topics: %d topics", len(got.Topics))
	}
	// Named: u and an unknown topic she may not describe are TOPIC_AUTHORIZATION_FAILED;
	// an unknown topic she may describe but not create is not auto-created.
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations, aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeTopic, "fresh", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribe))
	b.createACLs(context.Background(), acls)
	named := kmsg.NewPtrMetadataRequest()
	named.Version, named.AllowAutoTopicCreation = 12, true
	for _, name := range []string{"u", "new", "fresh"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		named.Topics = append(named.Topics, rt)
	}
	got = decide(b, as("User:alice", named), kmsg.NewPtrMetadataResponse()).(*kmsg.MetadataResponse)
	codes := map[string]int16{}
	for _, mt := range got.Topics {
		codes[*mt.Topic] = mt.ErrorCode
	}
	if len(named.Topics) != 0 || codes["u"] != kerr.TopicAuthorizationFailed.Code || codes["new"] != kerr.TopicAuthorizationFailed.Code ||
		codes["fresh"] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("alice's metadata for u and new: %v", codes)
	}

	// A follower fetch needs ClusterAction.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID = 12, 1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = append(ft.Partitions, kmsg.NewFetchRequestTopicPartition())
	fetch.Topics = append(fetch.Topics, ft)
	fresp := decide(b, as("User:alice", fetch), kmsg.NewPtrFetchResponse()).(*kmsg.FetchResponse)
	if len(fresp.Topics) != 1 || fresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice's follower fetch: %+v", fresp.Topics)
	}
	// As a consumer she may read t.
	fetch = kmsg.NewPtrFetchRequest()
	fetch.Version, fetch.ReplicaID = 12, -1
	fetch.Topics = append(fetch.Topics, ft)
	if d := b.checkRequest(as("User:alice", fetch)); d.answer != nil || d.merge != nil {
		t.Error("alice's consumer fetch of t was refused")
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group = 9, "g"
	jresp := decide(b, as("User:alice", join), kmsg.NewPtrJoinGroupResponse()).(*kmsg.JoinGroupResponse)
	if jresp.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice's join without group Read: %v", kerr.ErrorForCode(jresp.ErrorCode))
	}

	// ACL APIs and idempotent producers.
	describe := kmsg.NewPtrDescribeACLsRequest()
	dresp := decide(b, as("User:alice", describe), kmsg.NewPtrDescribeACLsResponse()).(*kmsg.DescribeACLsResponse)
	if dresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("alice's DescribeAcls: %v", kerr.ErrorForCode(dresp.ErrorCode))
	}
	initPID := kmsg.NewPtrInitProducerIDRequest()
	presp := decide(b, as("User:bob", initPID), kmsg.NewPtrInitProducerIDResponse()).(*kmsg.InitProducerIDResponse)
	if presp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("bob's InitProducerId without IdempotentWrite or any Write: %v", kerr.ErrorForCode(presp.ErrorCode))
	}
	txn := kmsg.NewPtrInitProducerIDRequest()
	txn.TransactionalID = kmsg.StringPtr("x")
	presp = decide(b, as("User:alice", txn), kmsg.NewPtrInitProducerIDResponse()).(*kmsg.InitProducerIDResponse)
	if presp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Errorf("alice's InitProducerId for x: %v", kerr.ErrorForCode(presp.ErrorCode))
	}
}

// TestAuthorize_ACLAPIs adds, lists and deletes ACLs through the controller's
// handlers: duplicates are stored once, bad ACLs are INVALID_REQUEST, a filter
// deletes what it matches.
func TestAuthorize_ACLAPIs(t *testing.T) {
	b := authzBroker(t)
	ctx := context.Background()
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Version = 3
	acls.Creations = append(acls.Creations,
		aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead), // exists
		aclCreation("alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeTopic, "t", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationRead),      // bad principal
		aclCreation("User:bob", kmsg.ACLPermissionTypeDeny, kmsg.ACLResourceTypeGroup, "g-", kmsg.ACLResourcePatternTypePrefixed, kmsg.ACLOperationAll))
	res := b.createACLs(ctx, acls).Results
	if res[0].ErrorCode != 0 || res[1].ErrorCode != kerr.InvalidRequest.Code || res[2].ErrorCode != 0 {
		t.Fatalf("create results: %+v", res)
	}
	if n := len(b.Image().ACLs); n != 2 {
		t.Fatalf("%d ACLs stored, want 2", n)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.ResourceName = kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeMatch, kmsg.StringPtr("g-1")
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	del.Filters = append(del.Filters, f)
	dres := b.deleteACLs(ctx, del).Results
	if len(dres) != 1 || dres[0].ErrorCode != 0 || len(dres[0].MatchingACLs) != 1 || dres[0].MatchingACLs[0].Principal != "User:bob" {
		t.Fatalf("delete results: %+v", dres)
	}
	if n := len(b.Image().ACLs); n != 1 {
		t.Fatalf("%d ACLs left, want 1", n)
	}
}

// TestAuthorize_ClassName: both of Kafka's class names turn authorization on; any
// other value is a configuration error.
func TestAuthorize_ClassName(t *testing.T) {
	_, err := Start(Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		Properties: map[string]string{"authorizer.class.name": "com.example.MyAuthorizer"}, Logger: hclog.NewNullLogger()})
	if err == nil || !strings.Contains(err.Error(), "authorizer.class.name") {
		t.Fatalf("a foreign authorizer class: %v", err)
	}
	b := startTestBroker(t, "", map[string]string{"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", "super.users": "User:ANONYMOUS"})
	if !b.authzEnabled() {
		t.Fatal("AclAuthorizer does not enable authorization")
	}
}

// TestAuthorize_InterBrokerIdentity: with the authorizer on, an inter-broker listener
// that does not authenticate needs User:ANONYMOUS among the super users (the brokers'
// principal there), and the start says so; an authenticated one does not.
func TestAuthorize_InterBrokerIdentity(t *testing.T) {
	base := map[string]string{"authorizer.class.name": standardAuthorizer, "super.users": "User:admin"}
	_, err := Start(Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		Properties: base, Logger: hclog.NewNullLogger()})
	if err == nil || !strings.Contains(err.Error(), "add User:ANONYMOUS to super.users") {
		t.Fatalf("a PLAINTEXT inter-broker listener without User:ANONYMOUS as a super user: %v", err)
	}
	cfg := Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: map[string]string{
		"authorizer.class.name": standardAuthorizer, "super.users": "User:admin",
		"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "inter.broker.listener.name": "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms": "PLAIN", "sasl.mechanism.inter.broker.protocol": "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a" user_admin="a";`,
	}}
	if err := cfg.checkInterBrokerIdentity(); err != nil {
		t.Fatalf("a SASL inter-broker listener: %v", err)
	}
}
