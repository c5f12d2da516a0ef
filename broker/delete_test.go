package broker

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
)

// Deleting a topic renames each partition directory to "<dir>.<uuid>-delete" at once
// and removes it after log.segment.delete.delay.ms (a partition never written to has
// none: DESIGN.md S13); leftovers found at start are removed too.
func TestDeleteTopicRenamesThenRemoves(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, map[string]string{"log.segment.delete.delay.ms": "300"})
	adm := newAdmin(t, b)
	mustCreateTopic(t, adm, "gone", 2, nil)
	produceN(t, b, "gone", 1) // partition 0 makes its directory; partition 1 never does
	logs := filepath.Join(dir, "logs")
	if _, err := os.Stat(filepath.Join(logs, "gone-0")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(logs, "gone-1")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a replica never written to has a directory: %v", err)
	}
	if resp, err := adm.DeleteTopic(testContext(t), "gone"); err != nil || resp.Err != nil {
		t.Fatalf("delete: %v %v", err, resp.Err)
	}
	deleted := func() []string {
		var out []string
		ents, _ := os.ReadDir(logs)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "gone-") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	for _, name := range deleted() {
		if !strings.HasSuffix(name, "-delete") {
			t.Fatalf("partition directory %s was not renamed", name)
		}
	}
	testwait.For(t, 20*time.Second, func() error {
		if left := deleted(); len(left) > 0 {
			return os.ErrExist
		}
		return nil
	})

	// A leftover from a crash is removed after a restart.
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(logs, "old-0.0123456789abcdef0123456789abcdef-delete")
	if err := os.MkdirAll(leftover, 0o755); err != nil {
		t.Fatal(err)
	}
	startTestBroker(t, dir, map[string]string{"log.segment.delete.delay.ms": "300"})
	testwait.For(t, 20*time.Second, func() error {
		_, err := os.Stat(leftover)
		if err == nil {
			return os.ErrExist
		}
		return nil
	})
}
