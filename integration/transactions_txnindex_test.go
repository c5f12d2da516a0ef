package integration

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Aborted transactions spread over several segments are in the segments' .txnindex
// files (34-byte entries); after kill -9 and a restart, read_committed still drops
// exactly the aborted records and read_uncommitted sees them all.
func TestTransactionIndexFilesSurviveKill(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, txnOptions()...)
	const topic = "txn-index"
	segmentBytes := "2048"
	c.CreateTopicRF(t, topic, 1, 1, map[string]*string{"segment.bytes": &segmentBytes})
	ctx := testContext(t)
	producer := c.Client(t, kgo.TransactionalID("txn-index-producer"), kgo.DefaultProduceTopic(topic))
	pad := strings.Repeat("x", 300)
	var committed, all []string
	for txn := range 6 {
		if err := producer.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			v := fmt.Sprintf("txn%d-%d-%s", txn, i, pad)
			if err := producer.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
				t.Fatal(err)
			}
			all = append(all, v)
			if txn%2 == 0 {
				committed = append(committed, v)
			}
		}
		end := kgo.TryCommit
		if txn%2 == 1 {
			end = kgo.TryAbort
		}
		if err := producer.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(committed)
	slices.Sort(all)
	check := func(what string) {
		t.Helper()
		got := consumeTxnTopic(t, c, topic, kgo.ReadCommitted(), len(committed))
		slices.Sort(got)
		if !slices.Equal(got, committed) {
			t.Fatalf("%s: read_committed got %d records, want the %d committed ones", what, len(got), len(committed))
		}
		got = consumeTxnTopic(t, c, topic, kgo.ReadUncommitted(), len(all))
		slices.Sort(got)
		if !slices.Equal(got, all) {
			t.Fatalf("%s: read_uncommitted got %d records, want %d", what, len(got), len(all))
		}
	}
	check("before the kill")
	c.Kill(0)
	c.Restart(0)
	check("after the restart")

	var files, entries int
	err := filepath.WalkDir(c.nodes[0].dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".txnindex") || !strings.Contains(path, topic+"-0") {
			return err
		}
		st, err := os.Stat(path)
		if err != nil {
			return err
		}
		if st.Size()%34 != 0 {
			t.Errorf("%s: %d bytes, not whole 34-byte entries", path, st.Size())
		}
		files++
		entries += int(st.Size() / 34)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 2 || entries != 3 {
		t.Fatalf("%d .txnindex files with %d entries, want the 3 aborted transactions in several segments", files, entries)
	}
}
