package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReadYourWrites_AdminChangesAcrossBrokers: once an admin change is answered, every
// live broker's answers reflect it. On three nodes, rounds of (a change through broker
// A, then at once a request through B and C) — topic creation seen by Metadata and
// DescribeConfigs, a config change seen by DescribeConfigs, partitions added seen by
// Metadata, a topic deletion seen by Metadata, client quotas seen by
// DescribeClientQuotas, an ACL seen by DescribeAcls, SCRAM credentials seen by
// DescribeUserScramCredentials, a reassignment and a preferred leader election seen by
// Metadata — count no stale answer. (Brokers listed a new topic 30–120 ms
// late, and DescribeConfigs through another broker right after CreateTopics was stale in
// 66 of 100 tries.)
func TestReadYourWrites_AdminChangesAcrossBrokers(t *testing.T) {
	// An authorizer, so that ACLs are stored; the tests' unauthenticated clients and the
	// inter-broker listener are User:ANONYMOUS, a super user.
	c := StartCluster(t, 3,
		WithProperty("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithProperty("super.users", "User:ANONYMOUS"))
	ctx := testContext(t)
	clients := make([]*kgo.Client, 3)
	for i := range clients {
		clients[i] = c.ClientTo(t, i)
	}
	// 60 rounds make every kind of change (one round in 10 or in 4) through each of the
	// three brokers at least twice; 200 ran past the test's minute on a loaded 2-core
	// machine. Serial: beside other tests even 60 did.
	rounds := 60
	if testing.Short() {
		rounds = 20
	}
	stale := map[string]int{}
	staleAt := func(what string, i int, err error) {
		if err != nil {
			stale[what]++
			if stale[what] <= 3 {
				t.Logf("%s through node %d: %v", what, i, err)
			}
		}
	}
	for round := range rounds {
		a := round % 3
		others := []int{(a + 1) % 3, (a + 2) % 3}
		adm := kadm.NewClient(clients[a])
		topic := fmt.Sprintf("ryw-%d", round)

		// CreateTopics through A; Metadata and DescribeConfigs through the others.
		if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kmsg.StringPtr("123456")}, topic); err != nil {
			t.Fatalf("round %d: create: %v", round, err)
		}
		for _, i := range others {
			staleAt("metadata after create", i, partitionsSeen(ctx, clients[i], topic, 1))
			staleAt("describe configs after create", i, configSeen(ctx, clients[i], topic, "retention.ms", "123456"))
		}

		// IncrementalAlterConfigs through A.
		if err := alterTopicConfig(ctx, clients[a], topic, "retention.ms", "654321"); err != nil {
			t.Fatalf("round %d: alter: %v", round, err)
		}
		for _, i := range others {
			staleAt("describe configs after alter", i, configSeen(ctx, clients[i], topic, "retention.ms", "654321"))
		}

		// CreatePartitions through A.
		if round%4 == 0 {
			if _, err := adm.CreatePartitions(ctx, 2, topic); err != nil {
				t.Fatalf("round %d: create partitions: %v", round, err)
			}
			for _, i := range others {
				staleAt("metadata after create partitions", i, partitionsSeen(ctx, clients[i], topic, 3))
			}
		}

		// AlterPartitionReassignments, then a preferred ElectLeaders, through A: partition
		// 0 moves from its replica r to [n, r]; once the move is done (asked of A), n is
		// elected its preferred leader.
		if round%10 == 5 {
			r, err := partitionSeen(ctx, clients[a], topic, nil, -1)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			n := (r + 1) % 3 // node ids are 0, 1, 2
			var req kadm.AlterPartitionAssignmentsReq
			req.Assign(topic, 0, []int32{n, r})
			res, err := adm.AlterPartitionAssignments(ctx, req)
			if err == nil {
				err = res.Error()
			}
			if err != nil {
				t.Fatalf("round %d: reassign: %v", round, err)
			}
			for _, i := range others {
				_, err := partitionSeen(ctx, clients[i], topic, []int32{n, r}, -1)
				staleAt("metadata after reassignment", i, err)
			}
			testwait.ForWhat(t, 30*time.Second, "reassignment done", func() error { return reassignmentDone(ctx, adm, topic) })
			el, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
			if err == nil {
				err = el[topic][0].Err
			}
			if err != nil {
				t.Fatalf("round %d: elect leaders: %v", round, err)
			}
			for _, i := range others {
				_, err := partitionSeen(ctx, clients[i], topic, []int32{n, r}, n)
				staleAt("metadata after preferred election", i, err)
			}
		}

		// DeleteTopics through A.
		if round%4 == 1 {
			if _, err := adm.DeleteTopics(ctx, topic); err != nil {
				t.Fatalf("round %d: delete: %v", round, err)
			}
			for _, i := range others {
				staleAt("metadata after delete", i, partitionsSeen(ctx, clients[i], topic, 0))
			}
		}

		// AlterClientQuotas through A.
		if round%10 == 2 {
			client := fmt.Sprintf("ryw-client-%d", round)
			alter := []kadm.AlterClientQuotaEntry{{Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &client}},
				Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1 << 20}}}}
			if _, err := adm.AlterClientQuotas(ctx, alter); err != nil {
				t.Fatalf("round %d: quotas: %v", round, err)
			}
			for _, i := range others {
				staleAt("describe client quotas after alter", i, quotaSeen(ctx, clients[i], client))
			}
		}

		// CreateAcls through A.
		if round%10 == 3 {
			acl := kadm.NewACLs().Allow(fmt.Sprintf("User:ryw-%d", round)).AllowHosts().
				Topics(topic).Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
			if _, err := adm.CreateACLs(ctx, acl); err != nil {
				t.Fatalf("round %d: create ACLs: %v", round, err)
			}
			for _, i := range others {
				staleAt("describe ACLs after create", i, aclSeen(ctx, clients[i], acl))
			}
		}

		// AlterUserScramCredentials through A.
		if round%10 == 4 {
			user := fmt.Sprintf("ryw-user-%d", round)
			res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "pw"}})
			if err == nil {
				err = res.Error()
			}
			if err != nil {
				t.Fatalf("round %d: SCRAM: %v", round, err)
			}
			for _, i := range others {
				staleAt("describe SCRAM credentials after alter", i, scramSeen(ctx, clients[i], user))
			}
		}
	}
	for what, n := range stale {
		t.Errorf("%s: %d stale answers", what, n)
	}
}

// topicMetadata asks Metadata through cl about topic alone.
func topicMetadata(ctx context.Context, cl *kgo.Client, topic string) (kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, mt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.MetadataResponseTopic{}, err
	}
	return resp.Topics[0], nil
}

// partitionsSeen checks that Metadata through cl shows topic with n partitions (0: the
// topic does not exist).
func partitionsSeen(ctx context.Context, cl *kgo.Client, topic string, n int) error {
	t, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return err
	}
	switch {
	case n == 0 && t.ErrorCode != kerr.UnknownTopicOrPartition.Code:
		return fmt.Errorf("%s still listed (%v)", topic, kerr.ErrorForCode(t.ErrorCode))
	case n > 0 && (t.ErrorCode != 0 || len(t.Partitions) != n):
		return fmt.Errorf("%s: %v, %d partitions, want %d", topic, kerr.ErrorForCode(t.ErrorCode), len(t.Partitions), n)
	}
	return nil
}

// partitionSeen checks that Metadata through cl shows topic's partition 0 with replicas
// (nil: any) and leader (-1: any), and returns its leader.
func partitionSeen(ctx context.Context, cl *kgo.Client, topic string, replicas []int32, leader int32) (int32, error) {
	t, err := topicMetadata(ctx, cl, topic)
	if err != nil {
		return -1, err
	}
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return -1, fmt.Errorf("%s: %w", topic, err)
	}
	for _, p := range t.Partitions {
		if p.Partition != 0 {
			continue
		}
		switch {
		case replicas != nil && !slices.Equal(p.Replicas, replicas):
			return -1, fmt.Errorf("%s-0: replicas %v, want %v", topic, p.Replicas, replicas)
		case leader >= 0 && p.Leader != leader:
			return -1, fmt.Errorf("%s-0: leader %d, want %d", topic, p.Leader, leader)
		}
		return p.Leader, nil
	}
	return -1, fmt.Errorf("%s-0 not listed", topic)
}

// reassignmentDone reports an error while ListPartitionReassignments still lists one of
// topic's partitions.
func reassignmentDone(ctx context.Context, adm *kadm.Client, topic string) error {
	res, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		return err
	}
	if len(res) > 0 {
		return fmt.Errorf("%s still being reassigned", topic)
	}
	return nil
}

// configSeen checks that DescribeConfigs through cl shows topic's name=value.
func configSeen(ctx context.Context, cl *kgo.Client, topic, name, value string) error {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	r := resp.Resources[0]
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return err
	}
	for _, c := range r.Configs {
		if c.Name == name && c.Value != nil && *c.Value == value {
			return nil
		}
	}
	return fmt.Errorf("%s: %s is not %s yet", topic, name, value)
}

// alterTopicConfig sets one topic config with IncrementalAlterConfigs through cl.
func alterTopicConfig(ctx context.Context, cl *kgo.Client, topic, name, value string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, cfg)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

// quotaSeen checks that DescribeClientQuotas through cl lists client's quota.
func quotaSeen(ctx context.Context, cl *kgo.Client, client string) error {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	comp := kmsg.NewDescribeClientQuotasRequestComponent()
	comp.EntityType, comp.MatchType, comp.Match = "client-id", 0, kmsg.StringPtr(client)
	req.Components = append(req.Components, comp)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Entries) != 1 {
		return fmt.Errorf("quota of %s not listed yet", client)
	}
	return nil
}

// TestReadYourWrites_Sarama: the same guarantee through sarama's ClusterAdmin, which
// sends its admin requests to one broker and its describes to another: a topic created
// and a config altered through node A are described through B at once.
func TestReadYourWrites_Sarama(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	admins := make([]sarama.ClusterAdmin, 3)
	for i := range admins {
		adm, err := sarama.NewClusterAdmin([]string{c.Addr(i)}, sarama.NewConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer adm.Close()
		admins[i] = adm
	}
	stale := 0
	for round := range 30 {
		a, b := round%3, (round+1)%3
		topic := fmt.Sprintf("ryw-sarama-%d", round)
		if err := admins[a].CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
			ConfigEntries: map[string]*string{"retention.ms": kmsg.StringPtr("222222")}}, false); err != nil {
			t.Fatalf("round %d: create: %v", round, err)
		}
		entries, err := admins[b].DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms"}})
		if err != nil || len(entries) != 1 || entries[0].Value != "222222" {
			stale++
			if stale <= 3 {
				t.Logf("round %d: describe through node %d: %v %+v", round, b, err, entries)
			}
		}
		if err := admins[a].AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": kmsg.StringPtr("333333")}, false); err != nil {
			t.Fatalf("round %d: alter: %v", round, err)
		}
		entries, err = admins[b].DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic, ConfigNames: []string{"retention.ms"}})
		if err != nil || len(entries) != 1 || entries[0].Value != "333333" {
			stale++
			if stale <= 3 {
				t.Logf("round %d: describe after alter through node %d: %v %+v", round, b, err, entries)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d stale answers", stale)
	}
}

// aclSeen checks that DescribeAcls through cl finds the ACL acl created.
func aclSeen(ctx context.Context, cl *kgo.Client, acl *kadm.ACLBuilder) error {
	res, err := kadm.NewClient(cl).DescribeACLs(ctx, acl)
	if err != nil {
		return err
	}
	for _, r := range res {
		if r.Err != nil {
			return r.Err
		}
		if len(r.Described) == 0 {
			return fmt.Errorf("no ACL matches %v", r.Name)
		}
	}
	return nil
}

// scramSeen checks that DescribeUserScramCredentials through cl knows user.
func scramSeen(ctx context.Context, cl *kgo.Client, user string) error {
	described, err := kadm.NewClient(cl).DescribeUserSCRAMs(ctx, user)
	if err == nil {
		err = described.Error()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", user, err)
	}
	if _, ok := described[user]; !ok {
		return fmt.Errorf("%s not described", user)
	}
	return nil
}
