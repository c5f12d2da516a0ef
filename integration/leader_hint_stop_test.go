package integration

// A stopping leader's last answers (KIP-951, broker/leader_hint_linger.go): a client
// that keeps sending to a partition's leader while it stops gracefully is answered,
// before its connection closes, with the new leader rather than with a closed
// connection.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// hintedAnswer is one partition answer read from the stopping leader.
type hintedAnswer struct {
	code          int16
	leader, epoch int32
	endpoints     []string // "id@host:port"
}

// answerLog collects a request loop's answers until its connection ends.
type answerLog struct {
	mu      sync.Mutex
	answers []hintedAnswer
	ok      int // answers without an error
	end     error
}

func (l *answerLog) add(a hintedAnswer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers = append(l.answers, a)
	if a.code == 0 {
		l.ok++
	}
}

func (l *answerLog) snapshot() ([]hintedAnswer, int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]hintedAnswer(nil), l.answers...), l.ok, l.end
}

// endpointsOf is an answer's NodeEndpoints as "id@host:port".
func endpointsOf(brokers []kmsg.ProduceResponseBroker) []string {
	var out []string
	for _, b := range brokers {
		out = append(out, fmt.Sprintf("%d@%s:%d", b.NodeID, b.Host, b.Port))
	}
	return out
}

// untilClosed sends one request at a time on br, every hintPace, recording each answer
// with read, until a request fails (the broker closed the connection and its port).
func untilClosed(ctx context.Context, br *kgo.Broker, l *answerLog, req func() kmsg.Request, read func(kmsg.Response) hintedAnswer) {
	for ctx.Err() == nil {
		resp, err := br.Request(ctx, req())
		if err != nil {
			l.mu.Lock()
			l.end = err
			l.mu.Unlock()
			return
		}
		l.add(read(resp))
		time.Sleep(hintPace) // the client's pace, not a synchronisation
	}
}

// hintPace is the pace of TestLeaderHints_StoppingLeaderAnswers' clients: a request
// every 25 ms, several within the stopping leader's linger (250 ms), few within the
// instant between a leadership's move and the connection's close without it.
const hintPace = 25 * time.Millisecond

// TestLeaderHints_StoppingLeaderAnswers: a producer (Produce v13, acks=1) and a
// consumer (Fetch v17 at the old leader epoch, long-polling at the end of the log)
// that keep sending on their connections to a partition's leader while it stops
// gracefully get, before the connections close, NOT_LEADER_OR_FOLLOWER and
// FENCED_LEADER_EPOCH (Kafka's answer to an older epoch, Partition.checkCurrentLeaderEpoch)
// naming the new leader, its epoch and its endpoint; no such answer lacks the hint.
// Without the stopping leader's linger the connections closed as soon as the
// leadership moved and such clients mostly read nothing.
func TestLeaderHints_StoppingLeaderAnswers(t *testing.T) {
	c := StartCluster(t, 3)
	const topic = "hints-stopping"
	c.CreateTopicRF(t, topic, 1, 3, nil)
	c.WaitConverged()
	id, leader, epoch := topicLeader(t, c, 0, topic)
	cl := c.ClientTo(t, int(leader), kgo.MaxVersions(kversion.Stable()))
	br := cl.SeedBrokers()[0]
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	produced, fetched := &answerLog{}, &answerLog{}
	var loops sync.WaitGroup
	loops.Add(2)
	go func() {
		defer loops.Done()
		untilClosed(ctx, br, produced, func() kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks, req.TimeoutMillis = 13, 1, 5000
			rt := kmsg.NewProduceRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Records = recordBatch("v")
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) hintedAnswer {
			resp := r.(*kmsg.ProduceResponse)
			p := resp.Topics[0].Partitions[0]
			return hintedAnswer{p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, endpointsOf(resp.Brokers)}
		})
	}()
	go func() {
		defer loops.Done()
		var next int64 // the high watermark last answered: each fetch parks until a write
		untilClosed(ctx, br, fetched, func() kmsg.Request {
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 17, -1, 500, 1<<20, 1<<20
			req.SessionEpoch = -1
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = epoch, next, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) hintedAnswer {
			resp := r.(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			if p.ErrorCode == 0 {
				next = p.HighWatermark
			}
			brokers := make([]kmsg.ProduceResponseBroker, len(resp.Brokers))
			for i, b := range resp.Brokers {
				brokers[i] = kmsg.ProduceResponseBroker(b) // the same fields
			}
			return hintedAnswer{p.ErrorCode, p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch, endpointsOf(brokers)}
		})
	}()
	// Both loops have been answered by the leader before it stops.
	testwait.For(t, testTimeout, func() error {
		if _, ok, _ := produced.snapshot(); ok == 0 {
			return errNotYet
		}
		if _, ok, _ := fetched.snapshot(); ok == 0 {
			return errNotYet
		}
		return nil
	})
	stopErr := stopInBackground(c, int(leader))
	loops.Wait()
	if err := <-stopErr; err != nil {
		t.Fatalf("node-%d: shutdown: %v", leader, err)
	}
	other := otherThan(leader)
	var newLeader, newEpoch int32
	testwait.For(t, testTimeout, func() error {
		_, newLeader, newEpoch = topicLeader(t, c, other, topic)
		if newLeader < 0 || newLeader == leader {
			return fmt.Errorf("node-%d names leader %d", other, newLeader)
		}
		return nil
	})
	want := hintedAnswer{leader: newLeader, epoch: newEpoch, endpoints: []string{fmt.Sprintf("%d@%s", newLeader, c.Addr(int(newLeader)))}}
	check := func(name string, l *answerLog, code int16) {
		t.Helper()
		answers, _, end := l.snapshot()
		hinted := 0
		for _, a := range answers {
			if a.code == 0 {
				continue
			}
			if a.code != code && a.code != kerr.NotLeaderForPartition.Code {
				t.Errorf("%s: answered %v", name, kerr.ErrorForCode(a.code))
				continue
			}
			if a.leader != want.leader || a.epoch != want.epoch || fmt.Sprint(a.endpoints) != fmt.Sprint(want.endpoints) {
				t.Errorf("%s: %v names %d@%d at %v, want %d@%d at %v", name, kerr.ErrorForCode(a.code),
					a.leader, a.epoch, a.endpoints, want.leader, want.epoch, want.endpoints)
				continue
			}
			hinted++
		}
		if hinted == 0 {
			t.Errorf("%s: no answer named the new leader before the connection ended (%v); %d answers", name, end, len(answers))
		}
		t.Logf("%s: %d answers, %d naming the new leader, then %v", name, len(answers), hinted, end)
	}
	check("produce", produced, kerr.NotLeaderForPartition.Code)
	check("fetch", fetched, kerr.FencedLeaderEpoch.Code)
}
