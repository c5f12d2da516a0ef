package segment

import (
	"math"
	"testing"
	"time"
)

// TestTieredCopyDisableFallsBackToRetention: with remote.log.copy.disable=true local
// retention is retention.* (local.retention.* ignored) and does not wait for copies,
// as Kafka does once a topic's tiered data is read-only (KIP-950).
func TestTieredCopyDisableFallsBackToRetention(t *testing.T) {
	clock := &testClock{time.UnixMilli(6500)} // segments [0,4) and [4,8) are 2000 ms old or more
	cfg := remoteConfig()
	cfg.RemoteCopyDisable = true
	cfg.RetentionMs, cfg.LocalRetentionMs = 2000, 1 // local.retention.ms would delete [0,12)
	l, _, _ := tieredTestLog(t, cfg, clock)
	if err := l.SetRemoteLogState(-1, -1, l.LogEndOffset()); err != nil { // nothing copied
		t.Fatal(err)
	}
	res, err := l.EnforceRetention(math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.DeletedSegments) != 2 || l.LocalLogStartOffset() != 8 {
		t.Fatalf("result %+v, local log start %d: want [0,8) deleted by retention.ms", res, l.LocalLogStartOffset())
	}
}
