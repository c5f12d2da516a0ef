package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/s3test"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kadm"
)

// logObjects counts the .log objects under prefix.
func logObjects(t *testing.T, srv *s3test.Server, prefix string) int {
	n := 0
	for _, k := range srv.Keys(t, prefix) {
		if strings.HasSuffix(k, ".log") {
			n++
		}
	}
	return n
}

// alterTiered sets configs of the topic "tiered" and returns the error of the change.
func alterTiered(t *testing.T, c *Cluster, kv ...string) error {
	t.Helper()
	var cfgs []kadm.AlterConfig
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1]
		cfgs = append(cfgs, kadm.AlterConfig{Name: kv[i], Value: &v})
	}
	resp, err := c.Admin(t).AlterTopicConfigs(testContext(t), cfgs, "tiered")
	if err != nil {
		return err
	}
	return resp[0].Err
}

// TestCluster_TieredRemoteRetention: the leader's remote retention (Kafka's
// RLMExpirationTask) deletes the remote segments wholly below a DeleteRecords log
// start, then the oldest ones past retention.bytes, recording each deletion before its
// objects go; turning remote storage off is refused without
// remote.log.delete.on.disable=true and empties the topic's bucket prefix with it.
func TestCluster_TieredRemoteRetention(t *testing.T) {
	srv := s3test.Start(t)
	c := tieredCluster(t, srv, 1)
	produceTiered(t, c, 0, 400)
	segs := waitCopiedTo(t, c, 300)
	if len(segs) < 5 {
		t.Fatalf("%d copied segments", len(segs))
	}
	tid := c.Node(0).Image().Topic("tiered").ID
	prefix := fmt.Sprintf("tiered/tiered-%s/0/", tid)

	// DeleteRecords past the second copied segment: the two go from the bucket.
	cut := segs[1].EndOffset + 1
	resp, err := c.Admin(t).DeleteRecords(testContext(t), kadm.Offsets{"tiered": {0: {Topic: "tiered", Partition: 0, At: cut}}})
	if err != nil || resp.Error() != nil {
		t.Fatalf("DeleteRecords: %v %v", err, resp.Error())
	}
	remoteStart := func() (int64, int, error) {
		var first int64 = -1
		n := 0
		for _, s := range c.Node(0).Image().RemoteLogSegments(tid, 0) {
			if s.State != metadata.CopySegmentFinished {
				return 0, 0, fmt.Errorf("segment %s in %s", s.ID, s.State)
			}
			if first < 0 {
				first = s.StartOffset
			}
			n++
		}
		return first, n, nil
	}
	testwait.ForWhat(t, 30*time.Second, "remote segments below the DeleteRecords offset deleted", func() error {
		first, n, err := remoteStart()
		if err != nil {
			return err
		}
		if first < cut {
			return fmt.Errorf("remote log starts at %d, below %d", first, cut)
		}
		if objs := logObjects(t, srv, prefix); objs != n {
			return fmt.Errorf("%d log objects for %d remote segments", objs, n)
		}
		return nil
	})

	// retention.bytes of about one segment: the oldest remote segments go, the log
	// start moves past them.
	// Counted when no copy is in flight (remoteStart refuses a segment in
	// COPY_SEGMENT_STARTED: the copier goes on with the later segments meanwhile).
	var before int
	testwait.ForWhat(t, 30*time.Second, "the remote segments counted between copies", func() error {
		_, n, err := remoteStart()
		if err != nil {
			return err
		}
		if n < 2 {
			return fmt.Errorf("%d remote segments above the DeleteRecords offset", n)
		}
		before = n
		return nil
	})
	if err := alterTiered(t, c, "retention.bytes", "2500"); err != nil {
		t.Fatal(err)
	}
	testwait.ForWhat(t, 30*time.Second, "remote retention by size", func() error {
		_, n, err := remoteStart()
		if err != nil {
			return err
		}
		if n >= before {
			return fmt.Errorf("%d remote segments, %d before", n, before)
		}
		if objs := logObjects(t, srv, prefix); objs != n {
			return fmt.Errorf("%d log objects for %d remote segments", objs, n)
		}
		offs, err := c.Admin(t).ListStartOffsets(testContext(t), "tiered")
		if err != nil {
			return err
		}
		if o, _ := offs.Lookup("tiered", 0); o.Offset <= cut {
			return fmt.Errorf("log start %d", o.Offset)
		}
		return nil
	})

	// Turning remote storage off: refused without deleting the remote data (KIP-950);
	// with remote.log.delete.on.disable=true the bucket prefix empties.
	if err := alterTiered(t, c, "remote.storage.enable", "false"); err == nil || !strings.Contains(err.Error(), "INVALID_CONFIG") {
		t.Fatalf("disabling without deleting: %v, want INVALID_CONFIG", err)
	}
	if err := alterTiered(t, c, "remote.storage.enable", "false", "remote.log.delete.on.disable", "true"); err != nil {
		t.Fatal(err)
	}
	testwait.ForWhat(t, 30*time.Second, "remote data deleted on disable", func() error {
		if n := len(c.Node(0).Image().RemoteLogSegments(tid, 0)); n != 0 {
			return fmt.Errorf("%d remote segments", n)
		}
		if keys := srv.Keys(t, prefix); len(keys) != 0 {
			return fmt.Errorf("%d objects left", len(keys))
		}
		return nil
	})
	produceTiered(t, c, 400, 10) // the topic keeps working on local disk
}
