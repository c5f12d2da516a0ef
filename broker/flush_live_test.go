package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// flush.messages changed live to and from 1 switches an open replica's
// fsync-per-append mode at once: with 1, a produce is acknowledged only once fsynced
// (the replica's recovery point has reached the log end offset); with Kafka's
// "never", appends stay unflushed. flush.ms=0 set live flushes at the next append.
func TestFlushMessagesOneTakesEffectLive(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	const never = "9223372036854775807"
	mustCreateTopic(t, adm, "flushlive", 1, map[string]*string{"flush.messages": kmsg.StringPtr(never)})
	ctx := testContext(t)
	cl := newClient(t, b, kgo.DefaultProduceTopic("flushlive"), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	lp := b.partitions.get("flushlive", 0)
	if lp == nil {
		t.Fatal("no local replica of flushlive-0")
	}
	produce := func() {
		t.Helper()
		if err := cl.ProduceSync(ctx, kgo.StringRecord("v")).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	alter := func(value string) {
		t.Helper()
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "flush.messages", Value: kmsg.StringPtr(value)}}, "flushlive")
		if err != nil || resp[0].Err != nil {
			t.Fatalf("alter flush.messages=%s: %v %+v", value, err, resp)
		}
		deadline := time.Now().Add(10 * time.Second)
		for lp.settings.Load().syncEveryAppend != (value == "1") {
			if time.Now().After(deadline) {
				t.Fatalf("flush.messages=%s not applied to the open replica", value)
			}
			time.Sleep(5 * time.Millisecond) // polling the reconciler, bounded by the deadline
		}
	}
	unflushed := func() error {
		if st := lp.State(); st.RecoveryPoint >= st.LogEndOffset {
			return fmt.Errorf("recovery point %d, log end offset %d: flushed", st.RecoveryPoint, st.LogEndOffset)
		}
		return nil
	}

	for range 3 {
		produce()
	}
	if err := unflushed(); err != nil {
		t.Fatalf("flush.messages=never: %v", err)
	}
	alter("1")
	produce()
	if st := lp.State(); st.RecoveryPoint != st.LogEndOffset || st.LogEndOffset != 4 {
		t.Fatalf("flush.messages=1 set live: acknowledged with recovery point %d, log end offset %d", st.RecoveryPoint, st.LogEndOffset)
	}
	alter(never)
	produce()
	if err := unflushed(); err != nil {
		t.Fatalf("flush.messages=never set live again: %v", err)
	}

	// flush.ms=0 set live: the next append flushes the log.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "flush.ms", Value: kmsg.StringPtr("0")}}, "flushlive")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter flush.ms=0: %v %+v", err, resp)
	}
	deadline := time.Now().Add(10 * time.Second)
	for lp.settings.Load().segment.FlushMs != 0 {
		if time.Now().After(deadline) {
			t.Fatal("flush.ms=0 not applied to the open replica")
		}
		time.Sleep(5 * time.Millisecond) // polling the reconciler, bounded by the deadline
	}
	produce()
	if st := lp.State(); st.RecoveryPoint != st.LogEndOffset {
		t.Fatalf("flush.ms=0 set live: recovery point %d, log end offset %d after an append", st.RecoveryPoint, st.LogEndOffset)
	}
}
