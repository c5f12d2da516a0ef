package controller

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
)

// line returns the first line holding every part, or "".

// A broker the controller never heard from in its node's first term (a cluster
// started at once, that broker not up yet) is fenced at its session's end as any
// other, but logged at INFO, and at WARN once it has not registered
// notStartedWarnAfter later; one heard from and then silent is a WARN at once, and so
// is one never heard from in a later term of the node.
func TestFenceOfABrokerNotStartedYetIsInfo(t *testing.T) {
	const timeout = time.Second // far above the poll interval of a loaded machine
	run := func(t *testing.T, laterTerm bool) *testwait.Buffer {
		t.Helper()
		logs := &testwait.Buffer{}
		q := newMemQuorum(t, metadata.RegisterBrokerRecord{BrokerID: 1}, metadata.RegisterBrokerRecord{BrokerID: 2},
			metadata.RegisterBrokerRecord{BrokerID: 3})
		c := startController(t, q, timeout, func(cfg *Config) {
			cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
		})
		if laterTerm {
			c.hadTerm = true // before the term starts (q.leader)
		}
		q.leader.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) { return nil, nil }); err != nil {
			t.Fatal(err) // the term has started once a decision ran
		}
		c.Sessions().Heartbeat(2, 0, false, time.Now()) // heard once, then silent
		testwait.Until(t, 10*time.Second, "brokers 1 and 2 fenced", func() bool {
			c.Sessions().Heartbeat(3, int64(q.Image().Offset), false, time.Now())
			im := q.Image()
			return im.Brokers[1].Fenced && im.Brokers[2].Fenced
		})
		if q.Image().Brokers[3].Fenced {
			t.Fatal("a heartbeating broker was fenced")
		}
		return logs
	}
	t.Run("term at the node's start", func(t *testing.T) {
		logs := run(t, false)
		if l := logs.Line("[INFO]", "broker not started yet", "broker=1 "); l == "" {
			t.Error("broker 1, never heard from, was not logged at INFO as not started yet")
		}
		if l := logs.Line("[WARN]", "broker=1 "); l != "" {
			t.Errorf("broker 1, never heard from, logged at WARN: %s", l)
		}
		if l := logs.Line("[WARN]", "broker session expired", "broker=2 "); l == "" {
			t.Error("broker 2, heard from and then silent, was not logged at WARN")
		}
	})
	t.Run("a later term of the node", func(t *testing.T) {
		logs := run(t, true)
		if l := logs.Line("[WARN]", "broker session expired", "broker=1 "); l == "" {
			t.Error("broker 1, missing in a later term, was not logged at WARN")
		}
	})
	t.Run("never started", func(t *testing.T) {
		notStartedWarnAfter = 500 * time.Millisecond
		t.Cleanup(func() { notStartedWarnAfter = 30 * time.Second })
		logs := run(t, false)
		testwait.Until(t, 10*time.Second, "a WARN that broker 1 has not started", func() bool {
			return logs.Line("[WARN]", "broker has not started", "broker=1 ") != ""
		})
	})
}
