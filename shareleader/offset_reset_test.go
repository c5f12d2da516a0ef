package shareleader

import (
	"slices"
	"testing"
	"time"
)

// share.auto.offset.reset latest (Kafka's default): a share partition with no durable
// state starts at the high watermark, so the records already there are never
// delivered; its start is durable before the first acquisition.
func TestAutoOffsetResetLatest(t *testing.T) {
	r := newRig(t, GroupConfig{AutoOffsetReset: "latest"})
	ctx := testCtx(t)
	r.replica.produce(3)
	if got := r.fetch(ctx, "m1", 0).acquired(); len(got) != 0 {
		t.Fatalf("acquired %v of the records before the group started", got)
	}
	if calls := r.pers.callsSoFar(); len(calls) != 2 || calls[1].api != "write" || calls[1].change.StartOffset != 3 {
		t.Fatalf("persister calls %+v, want the start offset 3 written at load", calls)
	}
	r.replica.produce(2)
	if got := r.fetch(ctx, "m1", 1).acquired(); !slices.Equal(got, []string{"3-4@1"}) {
		t.Fatalf("acquired %v, want [3-4@1]", got)
	}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"PT1H": time.Hour, "P1D": 24 * time.Hour, "PT10M30S": 10*time.Minute + 30*time.Second,
		"P2DT3H": 51 * time.Hour, "PT0.5S": 500 * time.Millisecond,
	} {
		if got, err := parseISODuration(in); err != nil || got != want {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "1H", "PT1D", "P1H", "PTXS"} {
		if _, err := parseISODuration(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
