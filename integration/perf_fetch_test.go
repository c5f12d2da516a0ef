package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
)

// TestPerfFetchAcrossLeaders: `petrel perf fetch` reads a topic whose partitions are
// led by different brokers, one fetch loop per leader, and counts every record once,
// as `perf consume` does.
func TestPerfFetchAcrossLeaders(t *testing.T) {
	c := StartCluster(t, 3)
	bs := "--bootstrap-server=" + strings.Join(c.Addrs(), ",")
	if code, _, stderr := petrel("topics", "create", bs, "--partitions", "6", "--replication-factor", "1", "spread"); code != 0 {
		t.Fatalf("topics create: exit %d, %s", code, stderr)
	}
	// Metadata is answered from the asked broker's own image, which may not hold the
	// topic yet when CreateTopics (answered by the controller) returns.
	adm := kadm.NewClient(c.Client(t))
	leaders := map[int32]bool{}
	testwait.For(t, 20*time.Second, func() error {
		md, err := adm.Metadata(testContext(t), "spread")
		if err != nil {
			return err
		}
		clear(leaders)
		for _, p := range md.Topics["spread"].Partitions {
			if p.Leader < 0 {
				return fmt.Errorf("partition %d has no leader yet", p.Partition)
			}
			leaders[p.Leader] = true
		}
		if n := len(md.Topics["spread"].Partitions); n != 6 {
			return fmt.Errorf("%d partitions in metadata, want 6", n)
		}
		return nil
	})
	if len(leaders) < 2 {
		t.Fatalf("partitions led by %v: want several leaders", leaders)
	}
	if code, _, stderr := petrel("perf", "produce", bs, "--records", "3000", "--record-size", "100", "--acks", "all", "spread"); code != 0 {
		t.Fatalf("perf produce: exit %d, %s", code, stderr)
	}
	for _, cmd := range []string{"fetch", "consume"} {
		code, out, stderr := petrel("perf", cmd, bs, "--records", "3000", "--max-partition-fetch-bytes", "4096", "--json", "spread")
		var sum struct {
			Records int64 `json:"records"`
			Bytes   int64 `json:"bytes"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &sum) != nil || sum.Records != 3000 || sum.Bytes < 3000*100 {
			t.Fatalf("perf %s: exit %d, stdout %q, stderr %q", cmd, code, out, stderr)
		}
	}
}
