package integration

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/s3test"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// tieredCluster starts n nodes with the remote log manager on over srv (task interval
// 100 ms) and a topic "tiered" of one partition on every node, with 2 KiB segments and
// remote.storage.enable=true.
func tieredCluster(t *testing.T, srv *s3test.Server, n int, opts ...Option) *Cluster {
	t.Helper()
	return tieredClusterVia(t, srv, srv.Endpoint, n, nil, opts...)
}

// tieredClusterVia is tieredCluster with the brokers reaching srv at endpoint (a proxy
// in front of it), more broker properties and more configs of the topic.
func tieredClusterVia(t *testing.T, srv *s3test.Server, endpoint string, n int, topicConfigs map[string]string, opts ...Option) *Cluster {
	t.Helper()
	props := append(tieredPropertiesVia(srv, endpoint), WithProperty("rsm.config.key.prefix", "tiered/"))
	c := StartCluster(t, n, append(props, opts...)...)
	yes, seg := "true", "2048"
	cfgs := map[string]*string{"remote.storage.enable": &yes, "segment.bytes": &seg}
	for k, v := range topicConfigs {
		cfgs[k] = &v
	}
	c.CreateTopicRF(t, "tiered", 1, int16(n), cfgs)
	return c
}

// tieredProperties turn the remote log manager on over srv, its task every 100 ms.
func tieredProperties(srv *s3test.Server) []Option {
	return tieredPropertiesVia(srv, srv.Endpoint)
}

// tieredPropertiesVia is tieredProperties with the brokers reaching srv at endpoint.
func tieredPropertiesVia(srv *s3test.Server, endpoint string) []Option {
	return []Option{
		WithProperty("remote.log.storage.system.enable", "true"),
		WithProperty("remote.log.manager.task.interval.ms", "100"),
		WithProperty("rsm.config.storage.s3.endpoint.url", endpoint),
		WithProperty("rsm.config.storage.s3.bucket.name", srv.Bucket),
		WithProperty("rsm.config.storage.s3.region", srv.Region),
		WithProperty("rsm.config.storage.s3.path.style.access.enabled", "true"),
		WithProperty("rsm.config.storage.aws.access.key.id", srv.AccessKey),
		WithProperty("rsm.config.storage.aws.secret.access.key", srv.SecretKey),
	}
}

// produceTiered produces count records of about 200 bytes to "tiered", acks=all.
func produceTiered(t *testing.T, c *Cluster, from, count int) {
	t.Helper()
	cl := c.Client(t, kgo.ProducerBatchMaxBytes(1024))
	var recs []*kgo.Record
	for i := from; i < from+count; i++ {
		recs = append(recs, &kgo.Record{Topic: "tiered", Key: []byte(recordKey(i)), Value: []byte(recordValue(strings.Repeat("v", 180), i))})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// copiedSegments are node i's copied remote segments of tiered-0, checked to be
// contiguous from offset 0 with no segment copied twice.
func copiedSegments(c *Cluster, i int) ([]metadata.RemoteLogSegment, error) {
	im := c.Node(i).Image()
	t := im.Topic("tiered")
	if t == nil {
		return nil, fmt.Errorf("node-%d: no topic", i)
	}
	var out []metadata.RemoteLogSegment
	next := int64(0)
	for _, s := range im.RemoteLogSegments(t.ID, 0) {
		if s.State != metadata.CopySegmentFinished {
			continue
		}
		if s.StartOffset != next {
			return nil, fmt.Errorf("node-%d: copied segment at %d, expected %d (gap or overlap)", i, s.StartOffset, next)
		}
		next = s.EndOffset + 1
		out = append(out, s)
	}
	return out, nil
}

// waitCopiedTo waits until every live node's image has the segments copied past
// offset, contiguous from 0, all nodes alike; it returns them.
func waitCopiedTo(t *testing.T, c *Cluster, offset int64) []metadata.RemoteLogSegment {
	t.Helper()
	var segs []metadata.RemoteLogSegment
	testwait.ForWhat(t, 60*time.Second, fmt.Sprintf("segments copied past offset %d", offset), func() error {
		live := c.live()
		var err error
		if segs, err = copiedSegments(c, live[0]); err != nil {
			return err
		}
		if len(segs) == 0 || segs[len(segs)-1].EndOffset < offset {
			return fmt.Errorf("copied %d segments", len(segs))
		}
		for _, i := range live[1:] {
			other, err := copiedSegments(c, i)
			if err != nil {
				return err
			}
			if !slices.EqualFunc(segs, other, func(a, b metadata.RemoteLogSegment) bool { return a.ID == b.ID && a.State == b.State }) {
				return fmt.Errorf("node-%d and node-%d differ", live[0], i)
			}
		}
		return nil
	})
	return segs
}

// TestCluster_TieredCopiesClosedSegments: the leader copies each closed segment below
// the high watermark to the bucket under Aiven's keys, once; every broker's image has
// the remote segments; a new leader continues from the highest copied offset without
// copying a segment again; with the store down, produce keeps working and the copies
// catch up once it is back.
func TestCluster_TieredCopiesClosedSegments(t *testing.T) {
	srv := s3test.Start(t)
	c := tieredCluster(t, srv, 3)
	produceTiered(t, c, 0, 100)
	segs := waitCopiedTo(t, c, 50)

	// Aiven's layout: <prefix><topic>-<topicId>/<partition>/<20-digit offset>-<id>.<suffix>.
	tid := c.Node(0).Image().Topic("tiered").ID
	prefix := fmt.Sprintf("tiered/tiered-%s/0/", tid)
	keys := srv.Keys(t, prefix)
	for _, s := range segs {
		for _, suffix := range []string{"log", "index", "timeindex", "snapshot", "leader-epoch-checkpoint"} {
			key := fmt.Sprintf("%s%020d-%s.%s", prefix, s.StartOffset, s.ID, suffix)
			if !slices.Contains(keys, key) {
				t.Errorf("object %s missing; keys: %v", key, keys)
			}
		}
	}
	logKey := regexp.MustCompile(`\.log$`)
	countLogs := func() int {
		n := 0
		for _, k := range srv.Keys(t, prefix) {
			if logKey.MatchString(k) {
				n++
			}
		}
		return n
	}

	// A leadership change: the new leader goes on from the highest copied offset.
	leader := int(c.Node(0).Image().Topic("tiered").Partitions[0].Leader)
	c.Stop(leader)
	produceTiered(t, c, 100, 100)
	segs = waitCopiedTo(t, c, 150)
	if n := countLogs(); n != len(segs) {
		t.Fatalf("%d log objects for %d copied segments: a segment was copied twice or an abandoned copy was left", n, len(segs))
	}
	c.Restart(leader)

	// The store down: produce keeps working; copies catch up once it is back.
	srv.Stop()
	produceTiered(t, c, 200, 100)
	high := segs[len(segs)-1].EndOffset
	testwait.ForWhat(t, 30*time.Second, "a copy attempted and abandoned while the store is down", func() error {
		im := c.Node(0).Image()
		for _, s := range im.RemoteLogSegments(tid, 0) {
			if s.StartOffset > high && s.State == metadata.DeleteSegmentStarted {
				return nil // its objects' deletion failed too: left for the next pass
			}
		}
		return fmt.Errorf("no failed copy above offset %d yet", high)
	})
	srv.Restart(t)
	segs = waitCopiedTo(t, c, 250)
	if segs[len(segs)-1].EndOffset <= high {
		t.Fatalf("no copy after the store came back")
	}
	testwait.ForWhat(t, 30*time.Second, "abandoned copies deleted", func() error {
		if n := countLogs(); n != len(segs) {
			return fmt.Errorf("%d log objects for %d copied segments", n, len(segs))
		}
		return nil
	})
}

// TestCluster_TieredTopicDeletionEmptiesBucket: deleting a tiered topic keeps its
// remote segments in the metadata until the controller's node has deleted their
// objects; then the metadata and the topic's bucket prefix are empty.
func TestCluster_TieredTopicDeletionEmptiesBucket(t *testing.T) {
	srv := s3test.Start(t)
	c := tieredCluster(t, srv, 1)
	produceTiered(t, c, 0, 60)
	waitCopiedTo(t, c, 20)
	tid := c.Node(0).Image().Topic("tiered").ID
	prefix := fmt.Sprintf("tiered/tiered-%s/", tid)
	if len(srv.Keys(t, prefix)) == 0 {
		t.Fatal("no objects before the deletion")
	}
	if _, err := c.Admin(t).DeleteTopics(testContext(t), "tiered"); err != nil {
		t.Fatal(err)
	}
	testwait.ForWhat(t, 30*time.Second, "the deleted topic's remote segments deleted", func() error {
		if n := len(c.Node(0).Image().RemoteLogs); n != 0 {
			return fmt.Errorf("%d topics' remote logs in the image", n)
		}
		if keys := srv.Keys(t, prefix); len(keys) != 0 {
			return fmt.Errorf("%d objects left, e.g. %s", len(keys), keys[0])
		}
		return nil
	})
}

// TestCluster_TieredLocalRetentionAfterCopy: with local.retention.bytes of 1 byte, the
// leader's local log gives up segments once they are copied (part B's copy-gated local
// retention fed by the remote log manager's SetRemoteLogState): ListOffsets -4 (earliest
// local) moves up while -2 (earliest) stays at 0, and -5 (latest tiered) is the highest
// copied offset.
func TestCluster_TieredLocalRetentionAfterCopy(t *testing.T) {
	srv := s3test.Start(t)
	c := tieredCluster(t, srv, 1, WithProperty("log.retention.check.interval.ms", "100"))
	local := "1" // every copied segment goes
	if _, err := c.Admin(t).AlterTopicConfigs(testContext(t), []kadm.AlterConfig{{Name: "local.retention.bytes", Value: &local}}, "tiered"); err != nil {
		t.Fatal(err)
	}
	produceTiered(t, c, 0, 100)
	segs := waitCopiedTo(t, c, 50)
	testwait.ForWhat(t, 60*time.Second, "local segments deleted after their copy", func() error {
		earliestLocal, err := listOffsetVersionAt(c, 0, 9, -1, "tiered", 0, -4)
		if err != nil {
			return err
		}
		earliest, err := listOffsetVersionAt(c, 0, 9, -1, "tiered", 0, -2)
		if err != nil {
			return err
		}
		tiered, err := listOffsetVersionAt(c, 0, 9, -1, "tiered", 0, -5)
		if err != nil {
			return err
		}
		if earliestLocal == 0 || earliest != 0 || tiered < segs[len(segs)-1].EndOffset {
			return fmt.Errorf("earliest local %d, earliest %d, latest tiered %d", earliestLocal, earliest, tiered)
		}
		if earliestLocal > tiered+1 {
			return testwait.Permanent(fmt.Errorf("local log starts at %d, past the highest copied offset %d", earliestLocal, tiered))
		}
		return nil
	})
}
