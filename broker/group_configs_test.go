package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describeGroup asks DescribeConfigs (with synonyms) for group id's configs.
func describeGroup(t *testing.T, cl *kgo.Client, id string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, id
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Resources[0]
}

// alterGroup sets (value non-nil) or deletes group configs with IncrementalAlterConfigs
// and returns the resource's error code and message.
func alterGroup(t *testing.T, cl *kgo.Client, id string, configs map[string]*string) (int16, string) {
	t.Helper()
	return alterConfigsOf(t, cl, kmsg.ConfigResourceTypeGroupConfig, id, configs)
}

// alterConfigsOf sets (value non-nil) or deletes the configs of resource (rt, name)
// with IncrementalAlterConfigs and returns its error code and message.
func alterConfigsOf(t *testing.T, cl *kgo.Client, rt kmsg.ConfigResourceType, name string, configs map[string]*string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = rt, name
	for name, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = name, v
		if v == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testContext(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	return r.ErrorCode, derefOr(r.ErrorMessage)
}

func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// groupEntry is one config of a DescribeConfigs answer as "value source".
func groupEntry(t *testing.T, r kmsg.DescribeConfigsResponseResource, name string) (string, kmsg.ConfigSource, []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym) {
	t.Helper()
	for _, c := range r.Configs {
		if c.Name == name {
			if c.ReadOnly || c.IsSensitive || c.ConfigType != kmsg.ConfigTypeInt {
				t.Errorf("%s: read-only %t, sensitive %t, type %v", name, c.ReadOnly, c.IsSensitive, c.ConfigType)
			}
			return derefOr(c.Value), c.Source, c.ConfigSynonyms
		}
	}
	t.Fatalf("%s not described: %+v", name, r.Configs)
	return "", 0, nil
}

// TestGroupConfigs_DescribeAndAlter: DescribeConfigs of a GROUP resource shows the
// broker's values (STATIC_BROKER_CONFIG when supplied, DEFAULT_CONFIG otherwise) until
// the group has its own (GROUP_CONFIG, the broker's as its next synonym);
// IncrementalAlterConfigs sets and deletes them, refusing values outside the broker's
// group.consumer.* bounds with INVALID_CONFIG; the group coordinator reads them; an
// empty group name is INVALID_REQUEST.
func TestGroupConfigs_DescribeAndAlter(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"group.consumer.heartbeat.interval.ms": "6000", "group.consumer.max.session.timeout.ms": "70000"})
	cl := newClient(t, b)

	r := describeGroup(t, cl, "g")
	if r.ErrorCode != 0 || len(r.Configs) != 9 { // consumer.* and share.* (share_groups_test.go)
		t.Fatalf("describe: code %d, %d configs", r.ErrorCode, len(r.Configs))
	}
	if v, src, _ := groupEntry(t, r, "consumer.session.timeout.ms"); v != "45000" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("session timeout %s from %v, want 45000 DEFAULT_CONFIG", v, src)
	}
	if v, src, _ := groupEntry(t, r, "consumer.heartbeat.interval.ms"); v != "6000" || src != kmsg.ConfigSourceStaticBrokerConfig {
		t.Errorf("heartbeat interval %s from %v, want 6000 STATIC_BROKER_CONFIG", v, src)
	}

	if code, msg := alterGroup(t, cl, "g", map[string]*string{"consumer.session.timeout.ms": kmsg.StringPtr("70000")}); code != 0 {
		t.Fatalf("alter: %v %s", kerr.ErrorForCode(code), msg)
	}
	r = describeGroup(t, cl, "g")
	v, src, syn := groupEntry(t, r, "consumer.session.timeout.ms")
	if v != "70000" || src != kmsg.ConfigSourceGroupConfig || len(syn) != 2 ||
		syn[0].Source != kmsg.ConfigSourceGroupConfig || syn[1].Name != "group.consumer.session.timeout.ms" || syn[1].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after alter: %s from %v, synonyms %+v", v, src, syn)
	}
	if got := b.consumerGroupConfig("g"); got.SessionTimeout != 70*time.Second || got.HeartbeatInterval != 0 {
		t.Errorf("the coordinator reads %+v", got)
	}
	if got := b.consumerGroupConfig("other"); got.SessionTimeout != 0 {
		t.Errorf("another group reads %+v", got)
	}

	for _, c := range []struct {
		name, value string
		code        int16
		want        string
	}{
		{"consumer.session.timeout.ms", "70001", kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{"consumer.heartbeat.interval.ms", "15001", kerr.InvalidConfig.Code, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"consumer.heartbeat.interval.ms", "0", kerr.InvalidConfig.Code, "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be at least 1"},
		{"streams.session.timeout.ms", "45000", kerr.InvalidConfig.Code, "Unknown group config name: streams.session.timeout.ms"},
	} {
		code, msg := alterGroup(t, cl, "g", map[string]*string{c.name: &c.value})
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s=%s: %v %q, want %v %q", c.name, c.value, kerr.ErrorForCode(code), msg, kerr.ErrorForCode(c.code), c.want)
		}
	}
	if code, msg := alterGroup(t, cl, "", map[string]*string{"consumer.session.timeout.ms": kmsg.StringPtr("50000")}); code != kerr.InvalidRequest.Code {
		t.Errorf("alter of an empty group name: %v %q", kerr.ErrorForCode(code), msg)
	}
	if r := describeGroup(t, cl, ""); r.ErrorCode != kerr.InvalidRequest.Code || derefOr(r.ErrorMessage) != "Group name must not be empty" {
		t.Errorf("describe of an empty group name: %v %q", kerr.ErrorForCode(r.ErrorCode), derefOr(r.ErrorMessage))
	}

	if code, msg := alterGroup(t, cl, "g", map[string]*string{"consumer.session.timeout.ms": nil}); code != 0 {
		t.Fatalf("delete: %v %s", kerr.ErrorForCode(code), msg)
	}
	if v, src, _ := groupEntry(t, describeGroup(t, cl, "g"), "consumer.session.timeout.ms"); v != "45000" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("after delete: %s from %v", v, src)
	}
}

// TestGroupConfigs_AlterConfigs: the legacy AlterConfigs (key 33) replaces a group's
// configs as it does a topic's, with the same bounds.
func TestGroupConfigs_AlterConfigs(t *testing.T) {
	b := startTestBroker(t, "", nil)
	cl := newClient(t, b)
	alter := func(configs map[string]string) (int16, string) {
		req := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
		for k, v := range configs {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			res.Configs = append(res.Configs, c)
		}
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode, derefOr(resp.Resources[0].ErrorMessage)
	}
	if code, msg := alter(map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "8000"}); code != 0 {
		t.Fatalf("alter: %v %s", kerr.ErrorForCode(code), msg)
	}
	if code, msg := alter(map[string]string{"consumer.heartbeat.interval.ms": "9000"}); code != 0 {
		t.Fatalf("alter: %v %s", kerr.ErrorForCode(code), msg)
	}
	r := describeGroup(t, cl, "g")
	if v, src, _ := groupEntry(t, r, "consumer.session.timeout.ms"); v != "45000" || src != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("session timeout not named by the replacing alter: %s from %v", v, src)
	}
	if v, src, _ := groupEntry(t, r, "consumer.heartbeat.interval.ms"); v != "9000" || src != kmsg.ConfigSourceGroupConfig {
		t.Errorf("heartbeat interval %s from %v", v, src)
	}
	if code, msg := alter(map[string]string{"consumer.session.timeout.ms": "1000"}); code != kerr.InvalidConfig.Code || !strings.Contains(msg, "must be greater than or equal to group.consumer.min.session.timeout.ms") {
		t.Errorf("out of bounds: %v %q", kerr.ErrorForCode(code), msg)
	}
}

// TestGroupConfigs_Authorization: DescribeConfigs of a group needs DESCRIBE_CONFIGS on
// the group, IncrementalAlterConfigs and AlterConfigs ALTER_CONFIGS on it; a refusal
// is GROUP_AUTHORIZATION_FAILED for that resource alone.
func TestGroupConfigs_Authorization(t *testing.T) {
	b := authzBroker(t)
	ctx := testContext(t)
	acls := kmsg.NewPtrCreateACLsRequest()
	acls.Creations = append(acls.Creations,
		aclCreation("User:alice", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationDescribeConfigs),
		aclCreation("User:bob", kmsg.ACLPermissionTypeAllow, kmsg.ACLResourceTypeGroup, "g", kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLOperationAlterConfigs))
	for _, r := range b.createACLs(ctx, acls).Results {
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	// The rule (checkRequest) drops the refused resources and answers them.
	describeAs := func(who string, groups ...string) map[string]int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, g := range groups {
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
			req.Resources = append(req.Resources, res)
		}
		rr := as(who, req)
		d := b.checkRequest(rr)
		if d.answer != nil {
			t.Fatalf("%s: the whole request refused", who)
		}
		resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
		for _, res := range req.Resources { // those the rule let through
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceName = res.ResourceName
			resp.Resources = append(resp.Resources, rr)
		}
		if d.merge != nil {
			d.merge(resp)
		}
		out := map[string]int16{}
		for _, r := range resp.Resources {
			out[r.ResourceName] = r.ErrorCode
		}
		return out
	}
	if got := describeAs("User:alice", "g", "h"); got["g"] != 0 || got["h"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice (DescribeConfigs on g): %v", got)
	}
	// AlterConfigs implies DescribeConfigs, as in Kafka.
	if got := describeAs("User:bob", "g"); got["g"] != 0 {
		t.Errorf("bob (AlterConfigs on g) describing g: %v", got)
	}
	alterAs := func(who, group string) int16 {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "consumer.session.timeout.ms", kmsg.StringPtr("50000")
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		rr := as(who, req)
		d := b.checkRequest(rr)
		if d.answer != nil {
			t.Fatalf("%s: the whole request refused", who)
		}
		resp := b.incrementalAlterConfigs(ctx, req)
		if d.merge != nil {
			d.merge(resp)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := alterAs("User:alice", "g"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice altering g: %v", kerr.ErrorForCode(code))
	}
	if code := alterAs("User:bob", "g"); code != 0 {
		t.Errorf("bob altering g: %v", kerr.ErrorForCode(code))
	}
	if code := alterAs("User:bob", "h"); code != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob altering h: %v", kerr.ErrorForCode(code))
	}
}

// TestConsumerProtocolOff: without "consumer" in group.coordinator.rebalance.protocols
// ApiVersions offers neither ConsumerGroupHeartbeat nor ConsumerGroupDescribe, and
// either sent anyway is answered UNSUPPORTED_VERSION; with it (the default) both are
// offered once registered.
func TestConsumerProtocolOff(t *testing.T) {
	if b := (&Broker{cfg: Config{Properties: map[string]string{}}}); b.apiDisabled(kmsg.ConsumerGroupHeartbeat) {
		t.Fatal("the consumer protocol is off by default")
	}
	b := startTestBroker(t, "", map[string]string{"group.coordinator.rebalance.protocols": "classic"})
	for _, key := range []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe} {
		if !b.apiDisabled(key) {
			t.Fatalf("%s not disabled", key.Name())
		}
	}
	if b.apiDisabled(kmsg.Heartbeat) {
		t.Fatal("the classic Heartbeat disabled")
	}
	ctx := testContext(t)
	conn, err := rpc.Dial(ctx, b.Addr().String(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	av, err := conn.Do(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range av.(*kmsg.ApiVersionsResponse).ApiKeys {
		if consumerProtocolAPIs[kmsg.Key(k.ApiKey)] {
			t.Errorf("ApiVersions offers %s", kmsg.Key(k.ApiKey).Name())
		}
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "g", "m", 30000, []string{"t"}
	describe := kmsg.NewPtrConsumerGroupDescribeRequest()
	describe.Groups = []string{"g", "h"}
	for _, req := range []kmsg.Request{hb, describe} {
		resp, err := conn.Do(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		checkUnsupported(t, resp)
	}
}

func checkUnsupported(t *testing.T, resp kmsg.Response) {
	t.Helper()
	switch r := resp.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		if r.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ConsumerGroupHeartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	case *kmsg.ConsumerGroupDescribeResponse:
		if len(r.Groups) != 2 || r.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code || r.Groups[1].ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ConsumerGroupDescribe: %+v", r.Groups)
		}
	default:
		t.Fatalf("answered %T", resp)
	}
}

// TestConsumerGroupsConfig: the group coordinator's consumer group settings come from
// the group.consumer.* properties, Kafka's class names of the assignors included.
func TestConsumerGroupsConfig(t *testing.T) {
	got := consumerGroupsConfig(&Config{Properties: map[string]string{
		"group.consumer.session.timeout.ms": "50000", "group.consumer.heartbeat.interval.ms": "6000", "group.consumer.max.size": "7",
		"group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.RangeAssignor,uniform",
	}})
	if got.SessionTimeout != 50*time.Second || got.HeartbeatInterval != 6*time.Second || got.MaxSize != 7 ||
		len(got.Assignors) != 2 || got.Assignors[0].Name() != "range" || got.Assignors[1].Name() != "uniform" {
		t.Fatalf("consumer groups config %+v", got)
	}
	def := consumerGroupsConfig(&Config{})
	if def.SessionTimeout != 45*time.Second || def.HeartbeatInterval != 5*time.Second || def.MaxSize != 0 ||
		len(def.Assignors) != 2 || def.Assignors[0].Name() != "uniform" {
		t.Fatalf("default consumer groups config %+v", def)
	}
}

// TestConsumerMigrationPolicyProperty: group.consumer.migration.policy reaches the
// group coordinator. With "downgrade" a running classic group (a kgo consumer) is not
// upgraded by a consumer-protocol member's heartbeat: Kafka's GROUP_ID_NOT_FOUND "Group
// g is not a consumer group.", and the classic group goes on.
func TestConsumerMigrationPolicyProperty(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"group.initial.rebalance.delay.ms": "0", "group.consumer.migration.policy": "downgrade"})
	ctx := testContext(t)
	mustCreateTopic(t, newAdmin(t, b), "t", 2, nil)
	if err := newClient(t, b).ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consumeOne(t, newClient(t, b, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t")))
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "next", 0, 30000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := hb.RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || derefOr(resp.ErrorMessage) != "Group g is not a consumer group." {
		t.Fatalf("upgrade under policy downgrade: %v %q", kerr.ErrorForCode(resp.ErrorCode), derefOr(resp.ErrorMessage))
	}
	listed, err := newAdmin(t, b).ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g := listed["g"]; g.GroupType != "classic" || g.State != "Stable" {
		t.Fatalf("group g after the refused upgrade: %+v", g)
	}
}
