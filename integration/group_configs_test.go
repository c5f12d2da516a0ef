package integration

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupConfigOf asks node i's DescribeConfigs for a group config: its value and source.
func groupConfigOf(ctx context.Context, t *testing.T, c *Cluster, i int, group, name string) (string, kmsg.ConfigSource, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := c.RequestTo(ctx, t, i, req)
	if err != nil {
		return "", 0, err
	}
	r := resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return "", 0, err
	}
	if len(r.Configs) != 1 || r.Configs[0].Value == nil {
		return "", 0, fmt.Errorf("described %+v", r.Configs)
	}
	return *r.Configs[0].Value, r.Configs[0].Source, nil
}

// alterGroupConfigs sends IncrementalAlterConfigs SET of configs on group through cl
// and returns the resource's error.
func alterGroupConfigs(ctx context.Context, t testing.TB, cl *kgo.Client, group string, configs map[string]string) error {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	return nil
}

// TestCluster_GroupConfigsDurable: a group's configs set through one broker are
// described by every broker (GROUP_CONFIG), refused outside the broker's bounds
// (INVALID_CONFIG), kept when every node is killed and restarted, and kept when the
// group is deleted, as in Kafka.
func TestCluster_GroupConfigsDurable(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, WithProperty("group.consumer.max.session.timeout.ms", "90000"))
	ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
	defer cancel()
	cl := c.Client(t)
	if err := alterGroupConfigs(ctx, t, cl, "orders", map[string]string{"consumer.session.timeout.ms": "90000", "consumer.heartbeat.interval.ms": "7000"}); err != nil {
		t.Fatal(err)
	}
	err := alterGroupConfigs(ctx, t, cl, "orders", map[string]string{"consumer.session.timeout.ms": "90001"})
	if !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("out of bounds: %v, want INVALID_CONFIG", err)
	}
	everyNode := func(when string) {
		t.Helper()
		for i := range 3 {
			testwait.For(t, 30*time.Second, func() error {
				v, src, err := groupConfigOf(ctx, t, c, i, "orders", "consumer.session.timeout.ms")
				if err != nil {
					return err
				}
				if v != "90000" || src != kmsg.ConfigSourceGroupConfig {
					return fmt.Errorf("%s: node-%d describes %s from %v", when, i, v, src)
				}
				return nil
			})
		}
	}
	everyNode("after the alter")

	for i := range 3 {
		c.Kill(i)
	}
	c.Restart(0, 1, 2)
	everyNode("after a restart of every node")

	// Deleting the group (it has committed offsets, no members) keeps its configs.
	cl = c.Client(t)
	adm := kadm.NewClient(cl)
	c.CreateTopic(t, "t", 1, nil)
	if _, err := adm.CommitOffsets(ctx, "orders", kadm.OffsetsFromRecords(kgo.Record{Topic: "t", Partition: 0, Offset: 0})); err != nil {
		t.Fatal(err)
	}
	deleted, err := adm.DeleteGroup(ctx, "orders")
	if err != nil || deleted.Err != nil {
		t.Fatalf("delete group: %v %v", err, deleted.Err)
	}
	everyNode("after the group's deletion")
}

// TestAuthz_GroupConfigs: over SASL with the authorizer on, DescribeConfigs of a group
// needs DESCRIBE_CONFIGS on it and IncrementalAlterConfigs ALTER_CONFIGS (which implies
// DESCRIBE_CONFIGS); a refusal is GROUP_AUTHORIZATION_FAILED for that group alone.
func TestAuthz_GroupConfigs(t *testing.T) {
	t.Parallel()
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required ` +
		`user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`
	c := StartCluster(t, 1,
		WithProperty("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"),
		WithProperty("petrel.raft.security.protocol", "PLAINTEXT"),
		WithProperty("sasl.enabled.mechanisms", "PLAIN"),
		WithProperty("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
		WithProperty("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithProperty("super.users", "User:admin;User:ANONYMOUS"))
	addr := c.Node(0).ListenerAddr("SASL_PLAINTEXT").String()
	as := func(user string) *kgo.Client {
		return newClient(t, []string{addr}, saslOpt("PLAIN", user, user+"-secret"))
	}
	ctx, cancel := context.WithTimeout(testContext(t), 30*time.Second)
	defer cancel()
	acls := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Groups("g").Operations(kadm.OpDescribeConfigs).ResourcePatternType(kadm.ACLPatternLiteral)
	acls2 := kadm.NewACLs().Allow("User:bob").AllowHosts("*").Groups("g").Operations(kadm.OpAlterConfigs).ResourcePatternType(kadm.ACLPatternLiteral)
	adm := kadm.NewClient(as("admin"))
	for _, b := range []*kadm.ACLBuilder{acls, acls2} {
		res, err := adm.CreateACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	describe := func(cl *kgo.Client) map[string]int16 {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, g := range []string{"g", "h"} {
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
			req.Resources = append(req.Resources, res)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int16{}
		for _, r := range resp.Resources {
			out[r.ResourceName] = r.ErrorCode
		}
		return out
	}
	alice, bob := as("alice"), as("bob")
	if got := describe(alice); got["g"] != 0 || got["h"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("alice describes %v, want g allowed and h GROUP_AUTHORIZATION_FAILED", got)
	}
	if got := describe(bob); got["g"] != 0 || got["h"] != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("bob describes %v, want g allowed (AlterConfigs implies DescribeConfigs)", got)
	}
	set := map[string]string{"consumer.session.timeout.ms": "50000"}
	if err := alterGroupConfigs(ctx, t, alice, "g", set); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("alice alters g: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	if err := alterGroupConfigs(ctx, t, bob, "h", set); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Errorf("bob alters h: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	if err := alterGroupConfigs(ctx, t, bob, "g", set); err != nil {
		t.Errorf("bob alters g: %v", err)
	}
}
