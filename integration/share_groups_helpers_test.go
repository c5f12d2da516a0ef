package integration

// Helpers of the KIP-932 share group tests: members that are franz-go share consumers
// (kgo.ShareGroup), each deciding per record how to acknowledge it and recording what
// it was delivered and which acknowledgements the broker confirmed.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shareOptions are the broker properties of the share group tests: heartbeats and
// acquisition locks short enough for a test to wait them out (Kafka's lower bounds
// are 15 s for a lock, 5 s for a heartbeat).
func shareOptions() []Option {
	return []Option{
		WithProperty("group.share.min.record.lock.duration.ms", "1000"),
		WithProperty("group.share.min.heartbeat.interval.ms", "500"),
		WithProperty("group.share.heartbeat.interval.ms", "500"),
		WithProperty("group.share.min.session.timeout.ms", "3000"),
	}
}

// shareDelivery is one record delivered to a share member.
type shareDelivery struct {
	value         string
	partition     int32
	offset        int64
	deliveryCount int32
	at            time.Time
	status        kgo.AckStatus // what the member answered; 0: nothing (it stopped)
}

// shareMember is one kgo share consumer of a test.
type shareMember struct {
	id string
	cl *kgo.Client

	mu        sync.Mutex
	delivered []shareDelivery
	confirmed map[string]time.Time // value → when the broker confirmed its acknowledgement
	failed    map[int32]bool       // partitions whose acknowledgement failed since the last flush
	ackErrs   []error

	cancel context.CancelFunc
	done   chan struct{}
}

// shareDecision decides how a member acknowledges r; 0 leaves it unanswered (the
// member holds it until its lock expires or the member stops).
type shareDecision func(r *kgo.Record) kgo.AckStatus

// acceptAll accepts every record.
func acceptAll(*kgo.Record) kgo.AckStatus { return kgo.AckAccept }

// startShareMember starts member id of share group on topic, answering each record
// with decide, polling until stopped.
func startShareMember(t testing.TB, c *Cluster, group, topic, id string, decide shareDecision, extra ...kgo.Opt) *shareMember {
	t.Helper()
	m := &shareMember{id: id, confirmed: map[string]time.Time{}, failed: map[int32]bool{}, done: make(chan struct{})}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(c.Addrs()...),
		kgo.ClientID(id),
		kgo.ShareGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ShareAckCallback(m.onAcks),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	m.cl = cl
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx, decide)
	t.Cleanup(m.stop)
	return m
}

func (m *shareMember) run(ctx context.Context, decide shareDecision) {
	defer close(m.done)
	for ctx.Err() == nil {
		fs := m.cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			return
		}
		var answered []shareDelivery
		fs.EachRecord(func(r *kgo.Record) {
			status := decide(r)
			if status != 0 {
				r.Ack(status)
			}
			dl := shareDelivery{value: string(r.Value), partition: r.Partition,
				offset: r.Offset, deliveryCount: r.DeliveryCount(), at: time.Now(), status: status}
			answered = append(answered, dl)
			m.mu.Lock()
			m.delivered = append(m.delivered, dl)
			m.mu.Unlock()
		})
		if len(answered) == 0 {
			continue
		}
		// The acknowledgements of this poll are confirmed for every partition the
		// broker answered without an error.
		m.mu.Lock()
		clear(m.failed)
		m.mu.Unlock()
		if err := m.cl.FlushAcks(ctx); err != nil {
			return
		}
		now := time.Now()
		m.mu.Lock()
		for _, dl := range answered {
			if _, ok := m.confirmed[dl.value]; !ok && dl.status != 0 && dl.status != kgo.AckRenew && !m.failed[dl.partition] {
				m.confirmed[dl.value] = now
			}
		}
		m.mu.Unlock()
	}
}

// onAcks records the partitions whose acknowledgements failed.
func (m *shareMember) onAcks(_ *kgo.Client, rs kgo.ShareAckResults) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rs {
		if r.Err != nil {
			m.failed[r.Partition] = true
			m.ackErrs = append(m.ackErrs, fmt.Errorf("%s/%d: %w", r.Topic, r.Partition, r.Err))
		}
	}
}

// stop closes the member (its held records are released) and waits for its loop.
func (m *shareMember) stop() {
	m.cancel()
	<-m.done
	m.cl.Close()
}

// deliveries returns what the member was delivered so far.
func (m *shareMember) deliveries() []shareDelivery {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]shareDelivery(nil), m.delivered...)
}

// confirmedTimes returns when the broker confirmed each acknowledgement of the
// member's.
func (m *shareMember) confirmedTimes() map[string]time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.confirmed)
}

// waitShareAnswered waits until the members together were delivered, and answered
// with status, every value of want.
func waitShareAnswered(t testing.TB, d time.Duration, want []string, status kgo.AckStatus, members ...*shareMember) {
	t.Helper()
	testwait.For(t, d, func() error {
		got := map[string]bool{}
		for _, m := range members {
			for _, dl := range m.deliveries() {
				if dl.status == status {
					got[dl.value] = true
				}
			}
		}
		missing, first := 0, ""
		for _, v := range want {
			if !got[v] {
				if missing == 0 {
					first = v
				}
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d records not answered %v yet, e.g. %s", missing, len(want), status, first)
		}
		return nil
	})
}

// answeredCounts returns, per value, how many times members answered it with status.
func answeredCounts(status kgo.AckStatus, members ...*shareMember) map[string]int {
	n := map[string]int{}
	for _, m := range members {
		for _, dl := range m.deliveries() {
			if dl.status == status {
				n[dl.value]++
			}
		}
	}
	return n
}

// errNotYet is a poll condition not met yet.
var errNotYet = errors.New("not yet")
