package integration

// P8 cluster operations through real clients: CreatePartitions, live configs
// (IncrementalAlterConfigs, AlterConfigs), DeleteRecords and DescribeLogDirs, each
// through kadm and sarama.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCluster_CreatePartitions raises a topic's partition count with kadm (placed by
// the creation rule, replication factor kept) and with sarama (an explicit
// assignment), produces to and reads a new partition, and checks Kafka's refusals.
func TestCluster_CreatePartitions(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, "grow", 2, 2, nil)
	c.WaitConverged() // kadm reads the partition count from any broker's metadata first
	adm := c.Admin(t)
	ctx := testContext(t)

	resp, err := adm.CreatePartitions(ctx, 2, "grow")
	if err != nil || resp["grow"].Err != nil {
		t.Fatalf("kadm CreatePartitions +2: %v %+v", err, resp)
	}
	im := c.WaitConverged()
	if n := len(im.Topics["grow"].Partitions); n != 4 {
		t.Fatalf("grow has %d partitions after +2, want 4: %s", n, im.Topics["grow"])
	}
	for _, p := range im.Topics["grow"].Partitions {
		if len(p.Replicas) != 2 || p.Leader != p.Replicas[0] {
			t.Fatalf("grow partition %s: want 2 replicas led by the first", p)
		}
	}
	// Produce to and consume from a new partition.
	cl := c.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 3, Value: []byte("new")}).FirstErr(); err != nil {
		t.Fatalf("produce to the new partition 3: %v", err)
	}
	consumer := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"grow": {3: kgo.NewOffset().AtStart()}}))
	fetches := consumer.PollFetches(ctx)
	if err := fetches.Err(); err != nil || fetches.NumRecords() != 1 || string(fetches.Records()[0].Value) != "new" {
		t.Fatalf("consume partition 3: %v, %d records", err, fetches.NumRecords())
	}

	for _, tc := range []struct {
		name  string
		count int
		want  error
	}{
		{"decrease", 3, kerr.InvalidPartitions},
		{"same", 4, kerr.InvalidPartitions},
	} {
		resp, err := adm.UpdatePartitions(ctx, tc.count, "grow")
		if err != nil || !errors.Is(resp["grow"].Err, tc.want) {
			t.Fatalf("%s to %d: %v %+v, want %v", tc.name, tc.count, err, resp, tc.want)
		}
	}
	if resp, err := adm.CreatePartitions(ctx, 1, "no-such-topic"); err != nil || !errors.Is(resp["no-such-topic"].Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("unknown topic: %v %+v", err, resp)
	}

	// Sent to a broker that is not the controller, both are forwarded.
	other := (c.Controller() + 1) % 3
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.TimeoutMillis = 15000
	cpt := kmsg.NewCreatePartitionsRequestTopic()
	cpt.Topic, cpt.Count = "grow", 4
	cp.Topics = append(cp.Topics, cpt)
	if r, err := c.RequestTo(ctx, t, other, cp); err != nil || r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode != kerr.InvalidPartitions.Code {
		t.Fatalf("CreatePartitions to 4 via node-%d: %v %+v, want INVALID_PARTITIONS from the controller", other, err, r)
	}
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	iar := kmsg.NewIncrementalAlterConfigsRequestResource()
	iar.ResourceType, iar.ResourceName = kmsg.ConfigResourceTypeTopic, "grow"
	iac := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	iac.Name, iac.Value = "retention.ms", kmsg.StringPtr("3600000")
	iar.Configs = append(iar.Configs, iac)
	ia.Resources = append(ia.Resources, iar)
	if r, err := c.RequestTo(ctx, t, other, ia); err != nil || r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs via node-%d: %v %+v", other, err, r)
	}
	if v := c.WaitConverged().topicConfigs("grow")["retention.ms"]; v != "3600000" {
		t.Fatalf("retention.ms after IncrementalAlterConfigs via node-%d: %q", other, v)
	}

	// sarama, with an explicit assignment.
	sa := saramaAdmin(t, c)
	if err := sa.CreatePartitions("grow", 5, [][]int32{{2, 0}}, false); err != nil {
		t.Fatalf("sarama CreatePartitions with an assignment: %v", err)
	}
	im = c.WaitConverged()
	if p := im.Topics["grow"].Partitions; len(p) != 5 || !slices.Equal(p[4].Replicas, []int32{2, 0}) {
		t.Fatalf("grow after sarama's explicit assignment: %s", im.Topics["grow"])
	}
	for _, bad := range [][][]int32{{{1, 0}, {2, 1}}, {{1}}, {{1, 1}}, {{1, 9}}} {
		err := sa.CreatePartitions("grow", 6, bad, false)
		if !errors.Is(err, sarama.ErrInvalidReplicaAssignment) {
			t.Fatalf("sarama CreatePartitions with assignment %v: %v, want INVALID_REPLICA_ASSIGNMENT", bad, err)
		}
	}
	if err := sa.CreatePartitions("grow", 9, nil, true); err != nil {
		t.Fatalf("sarama validate-only: %v", err)
	}
	if n := len(c.WaitConverged().Topics["grow"].Partitions); n != 5 {
		t.Fatalf("validate-only created partitions: %d", n)
	}
}

// saramaAdmin returns a sarama cluster admin over every live node, closed at cleanup.
func saramaAdmin(t *testing.T, c *Cluster) sarama.ClusterAdmin {
	t.Helper()
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Admin.Timeout = 15 * time.Second
	adm, err := bounded(t, saramaTimeout, "NewClusterAdmin", func() (sarama.ClusterAdmin, error) {
		return sarama.NewClusterAdmin(c.Addrs(), cfg)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adm.Close() })
	return adm
}

// TestCluster_ConfigsLive alters topic and broker configs at run time and observes each
// through behaviour: max.message.bytes (topic, cluster default, per broker),
// segment.bytes and segment.ms (segments roll), retention.ms and retention.bytes (old
// segments deleted); DescribeConfigs
// shows the values with Kafka's sources (min.insync.replicas and
// unclean.leader.election.enable are observed in TestCluster_UncleanElections); bad keys and values get INVALID_CONFIG;
// sarama's legacy AlterConfigs replaces a topic's overrides.
func TestCluster_ConfigsLive(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, WithProperty("log.retention.check.interval.ms", "100"))
	ctx := testContext(t)
	adm := c.Admin(t)
	c.CreateTopic(t, "live", 1, nil)
	c.CreateTopic(t, "plain", 1, nil)
	set := func(topic string, kv ...string) {
		t.Helper()
		var cfgs []kadm.AlterConfig
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1]
			cfgs = append(cfgs, kadm.AlterConfig{Name: kv[i], Value: &v})
		}
		resp, err := adm.AlterTopicConfigs(ctx, cfgs, topic)
		if err == nil {
			_, err = resp.On(topic, nil)
		}
		if err != nil {
			t.Fatalf("alter %s %v: %v", topic, kv, err)
		}
	}
	produceCode := func(topic string) int16 { t.Helper(); return produceTo(t, c, 0, topic, -1) }
	waitCode := func(topic string, want int16) {
		t.Helper()
		testwait.For(t, 10*time.Second, func() error {
			if got := produceCode(topic); got != want {
				return fmt.Errorf("produce to %s: %v, want %v", topic, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
			}
			return nil
		})
	}

	// max.message.bytes on the topic, then removed.
	set("live", "max.message.bytes", "20")
	waitCode("live", kerr.MessageTooLarge.Code)
	if resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, "live"); err != nil || resp[0].Err != nil {
		t.Fatalf("delete max.message.bytes: %v %+v", err, resp)
	}
	waitCode("live", 0)

	// The cluster default message.max.bytes reaches a topic without an override.
	v := "20"
	if resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: &v}}); err != nil || resp[0].Err != nil {
		t.Fatalf("cluster default message.max.bytes: %v %+v", err, resp)
	}
	waitCode("plain", kerr.MessageTooLarge.Code)
	described, err := adm.DescribeTopicConfigs(ctx, "plain")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := described.On("plain", nil); err != nil || !hasConfig(cfg.Configs, "max.message.bytes", "20", "DYNAMIC_DEFAULT_BROKER_CONFIG") {
		t.Fatalf("plain's max.message.bytes after the cluster default: %v %+v", err, cfg)
	}
	// A per-broker value wins over the default.
	v2 := "1048588"
	if resp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "message.max.bytes", Value: &v2}}, 0); err != nil || resp[0].Err != nil {
		t.Fatalf("broker 0 message.max.bytes: %v %+v", err, resp)
	}
	waitCode("plain", 0)
	brokerCfgs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := brokerCfgs.On("0", nil); err != nil || !hasConfig(cfg.Configs, "message.max.bytes", v2, "DYNAMIC_BROKER_CONFIG") {
		t.Fatalf("broker 0 message.max.bytes: %v %+v", err, cfg)
	}

	// segment.bytes: small segments roll; then retention.ms deletes the closed ones.
	set("live", "segment.bytes", "200")
	for range 10 {
		if code := produceCode("live"); code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	dir := filepath.Join(c.nodes[0].dir, "logs", "live-0")
	if n := countSegments(t, dir); n < 3 {
		t.Fatalf("%d segments with segment.bytes=200 after 10 batches, want several", n)
	}
	set("live", "retention.ms", "1")
	testwait.For(t, 10*time.Second, func() error {
		offs, err := adm.ListStartOffsets(ctx, "live")
		if err != nil {
			return err
		}
		o, _ := offs.Lookup("live", 0)
		if o.Offset < 9 || countSegments(t, dir) != 1 {
			return fmt.Errorf("log start %d, %d segments: old segments not deleted", o.Offset, countSegments(t, dir))
		}
		return nil
	})

	// segment.ms: every append to an old enough segment rolls it; retention.bytes then
	// deletes the oldest segments down to the limit.
	c.CreateTopic(t, "sized", 1, nil)
	set("sized", "segment.ms", "1")
	sizedDir := filepath.Join(c.nodes[0].dir, "logs", "sized-0")
	for i := range 4 {
		testwait.For(t, 5*time.Second, func() error {
			if code := produceCode("sized"); code != 0 {
				return kerr.ErrorForCode(code)
			}
			if n := countSegments(t, sizedDir); n < i+1 {
				return fmt.Errorf("%d segments after %d appends with segment.ms=1", n, i+1)
			}
			return nil
		})
	}
	set("sized", "retention.bytes", "1")
	testwait.For(t, 10*time.Second, func() error {
		offs, err := adm.ListStartOffsets(ctx, "sized")
		if err != nil {
			return err
		}
		if o, _ := offs.Lookup("sized", 0); o.Offset < 3 {
			return fmt.Errorf("log start %d with retention.bytes=1: old segments not deleted", o.Offset)
		}
		return nil
	})

	// Refusals.
	bad := []struct {
		what   string
		alter  func() error
		reason string
	}{
		{"unknown topic config", func() error { return alterErr(adm.AlterTopicConfigs(ctx, cfg("no.such.config", "1"), "live")) }, "Unknown topic config name"},
		{"invalid value", func() error { return alterErr(adm.AlterTopicConfigs(ctx, cfg("max.message.bytes", "-5"), "live")) }, "max.message.bytes"},
		{"not a number", func() error { return alterErr(adm.AlterTopicConfigs(ctx, cfg("retention.ms", "soon"), "live")) }, "retention.ms"},
		{"unknown broker config", func() error { return alterErr(adm.AlterBrokerConfigs(ctx, cfg("no.such.config", "1"))) }, "Unknown broker config"},
		{"read-only broker config", func() error { return alterErr(adm.AlterBrokerConfigs(ctx, cfg("num.partitions", "3"))) }, "dynamically"},
	}
	for _, b := range bad {
		if err := b.alter(); !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), b.reason) {
			t.Errorf("%s: %v, want INVALID_CONFIG mentioning %q", b.what, err, b.reason)
		}
	}
	if err := alterErr(adm.AlterTopicConfigs(ctx, cfg("retention.ms", "1000"), "no-such-topic")); !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("unknown topic: %v", err)
	}

	// sarama's AlterConfigs (legacy) replaces the topic's overrides.
	sa := saramaAdmin(t, c)
	if err := sa.AlterConfig(sarama.TopicResource, "live", map[string]*string{"retention.bytes": kmsg.StringPtr("123456")}, false); err != nil {
		t.Fatalf("sarama AlterConfig: %v", err)
	}
	entries, err := sa.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: "live"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch {
		case e.Name == "retention.bytes" && (e.Value != "123456" || e.Source != sarama.SourceTopic):
			t.Errorf("retention.bytes after sarama AlterConfig: %+v", e)
		case (e.Name == "segment.bytes" || e.Name == "retention.ms") && e.Source == sarama.SourceTopic:
			t.Errorf("%s kept its override after a legacy AlterConfigs that did not name it: %+v", e.Name, e)
		}
	}
	if err := sa.AlterConfig(sarama.TopicResource, "live", map[string]*string{"flush.messages": kmsg.StringPtr("0")}, false); !errors.Is(err, sarama.ErrInvalidConfig) {
		t.Errorf("sarama AlterConfig flush.messages=0: %v, want INVALID_CONFIG", err)
	}
}

func cfg(name, value string) []kadm.AlterConfig {
	return []kadm.AlterConfig{{Name: name, Value: &value}}
}

// alterErr is the first error of an alter-configs call.
func alterErr(resp kadm.AlterConfigsResponses, err error) error {
	if err != nil {
		return err
	}
	for _, r := range resp {
		if r.Err != nil {
			return fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
		}
	}
	return nil
}

// hasConfig reports whether configs hold name=value from source.
func hasConfig(configs []kadm.Config, name, value, source string) bool {
	for _, c := range configs {
		if c.Key == name {
			return c.Value != nil && *c.Value == value && c.Source.String() == source
		}
	}
	return false
}

func countSegments(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".log") {
			n++
		}
	}
	return n
}

// TestCluster_DeleteRecordsAndLogDirs moves the log start offset with kadm's
// DeleteRecords and sees every replica follow; an offset past the high watermark is
// OFFSET_OUT_OF_RANGE; sarama's DeleteRecords moves it again; DescribeLogDirs (kadm and
// sarama) lists every replica with its size.
func TestCluster_DeleteRecordsAndLogDirs(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3)
	c.CreateTopicRF(t, "trim", 1, 3, map[string]*string{"segment.bytes": kmsg.StringPtr("300")})
	ctx := testContext(t)
	cl := c.Client(t)
	for i := range 40 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "trim", Value: []byte(recordValue("trim", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := c.Admin(t)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 25})
	resp, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup("trim", 0); r.Err != nil || r.LowWatermark != 25 {
		t.Fatalf("DeleteRecords to 25: %+v", r)
	}
	waitEarliest := func(want int64) {
		t.Helper()
		testwait.For(t, 15*time.Second, func() error {
			for i := range 3 {
				if got, err := listOffsetAt(c, i, -2, "trim", 0, -2); err != nil || got != want {
					return fmt.Errorf("node-%d: earliest offset %d (%v), want %d", i, got, err, want)
				}
			}
			return nil
		})
	}
	// The answer is the low watermark over the replica set: every replica has moved
	// already (no waiting).
	for i := range 3 {
		if got, err := listOffsetAt(c, i, -2, "trim", 0, -2); err != nil || got != 25 {
			t.Fatalf("node-%d right after DeleteRecords answered: earliest offset %d (%v), want 25", i, got, err)
		}
	}
	consumer := c.Client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"trim": {0: kgo.NewOffset().AtStart()}}))
	fetches := consumer.PollFetches(ctx)
	if err := fetches.Err(); err != nil || fetches.NumRecords() == 0 || fetches.Records()[0].Offset != 25 {
		t.Fatalf("consume from the start after DeleteRecords: %v, first %+v", err, fetches.Records())
	}

	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "trim", Partition: 0, At: 41})
	if resp, err = adm.DeleteRecords(ctx, offs); err != nil {
		t.Fatal(err)
	}
	if r, _ := resp.Lookup("trim", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("DeleteRecords past the high watermark: %+v", r)
	}

	sa := saramaAdmin(t, c)
	if err := sa.DeleteRecords("trim", map[int32]int64{0: 30}); err != nil {
		t.Fatalf("sarama DeleteRecords: %v", err)
	}
	waitEarliest(30) // sarama may have asked any broker's view of the leader: poll

	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int32{0, 1, 2} {
		found := false
		dirs[id].EachPartition(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "trim" && p.Partition == 0 {
				found = p.Size > 0 && !p.IsFuture && p.OffsetLag == 0
			}
		})
		if !found {
			t.Errorf("DescribeLogDirs of broker %d: no trim-0 with a size: %+v", id, dirs[id])
		}
	}
	sdirs, err := sa.DescribeLogDirs([]int32{0, 1, 2})
	if err != nil {
		t.Fatalf("sarama DescribeLogDirs: %v", err)
	}
	for id, ds := range sdirs {
		if len(ds) != 1 || ds[0].ErrorCode != sarama.ErrNoError || len(ds[0].Topics) == 0 {
			t.Errorf("sarama DescribeLogDirs broker %d: %+v", id, ds)
		}
	}
}
