package integration

// BenchmarkConsumerProtocolJoin: KIP-848's headline, measured. Ten kgo members consume
// a 100-partition topic while a producer writes one record to every partition every
// 20 ms; an eleventh member joins. Reported per protocol:
//
//   - settle-ms: from the joiner's start until every partition is owned by exactly one
//     member, the joiner included (by the members' assign and revoke callbacks);
//   - maxlag-ms: the longest any record produced after the join waited between its
//     production and its consumption: how long the partitions that moved (all of them,
//     under an eager rebalance) went unconsumed.
//
// Run with:
//
//	go test ./integration/ -run '^$' -bench 'BenchmarkConsumerProtocolJoin' -benchtime 3x -timeout 30m -v
//
// "consumer" is KIP-848 (kgo.ServerSideBalancer, uniform assignor, the broker's 5 s
// heartbeat interval); "consumer-3s" the same with the group's
// consumer.heartbeat.interval.ms at 3 s, the classic members' interval;
// "classic-cooperative" is kgo's default cooperative-sticky balancer, "classic-eager"
// the range balancer (kgo's 3 s heartbeat interval).

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	joinBenchMembers    = 10
	joinBenchPartitions = 100
	joinBenchTick       = 20 * time.Millisecond
)

func BenchmarkConsumerProtocolJoin(b *testing.B) {
	// Kafka's 5 s minimum heartbeat interval lowered for "consumer-3s"'s group config.
	c := StartCluster(b, 1, append(groupOptions(), WithProperty("group.consumer.min.heartbeat.interval.ms", "1000"))...)
	round := 0 // topic and group names: the benchmark runs each protocol more than once
	for _, proto := range []struct {
		name      string
		opts      []kgo.Opt
		heartbeat string // the group's consumer.heartbeat.interval.ms, if set
	}{
		{"consumer", []kgo.Opt{kgo.ServerSideBalancer()}, ""},
		{"consumer-3s", []kgo.Opt{kgo.ServerSideBalancer()}, "3000"},
		{"classic-cooperative", nil, ""},
		{"classic-eager", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}, ""},
	} {
		b.Run(proto.name, func(b *testing.B) {
			var settle, lag []time.Duration
			for range b.N {
				round++
				name := fmt.Sprintf("join-%s-%d", proto.name, round)
				if proto.heartbeat != "" {
					if err := alterGroupConfigs(context.Background(), b, c.Client(b), name,
						map[string]string{"consumer.heartbeat.interval.ms": proto.heartbeat}); err != nil {
						b.Fatal(err)
					}
				}
				s, l := joinRound(b, c, name, proto.opts)
				settle, lag = append(settle, s), append(lag, l)
			}
			b.ReportMetric(float64(median(settle).Milliseconds()), "settle-ms")
			b.ReportMetric(float64(median(lag).Milliseconds()), "maxlag-ms")
			b.Logf("%s: settle %v, max lag %v", proto.name, settle, lag)
		})
	}
}

// joinRound runs one round on its own topic and group and returns its settle time and
// its maximal lag.
func joinRound(b *testing.B, c *Cluster, name string, opts []kgo.Opt) (settle, maxLag time.Duration) {
	c.CreateTopic(b, name, joinBenchPartitions, nil)
	own := newOwnership()
	var members []*cgMember
	var ids []string
	for i := range joinBenchMembers {
		id := fmt.Sprintf("m%02d", i)
		members = append(members, startTrackedMember(b, c, own, name, name, id, opts...))
		ids = append(ids, id)
	}
	own.waitOwnedWithin(b, 2*groupWait, joinBenchPartitions, ids...)

	// The ticker: one record to every partition every joinBenchTick, valued with its
	// production time.
	cl := c.Client(b, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(joinBenchTick)
		defer t.Stop()
		for ctx.Err() == nil {
			now := strconv.FormatInt(time.Now().UnixNano(), 10)
			for p := range int32(joinBenchPartitions) {
				cl.Produce(ctx, &kgo.Record{Topic: name, Partition: p, Value: []byte("tick/" + now)}, nil)
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	time.Sleep(time.Second) // steady consumption before the join

	joined := time.Now()
	members = append(members, startTrackedMember(b, c, own, name, name, "joiner", opts...))
	own.waitOwnedWithin(b, 2*groupWait, joinBenchPartitions, append(ids, "joiner")...)
	settle = time.Since(joined)
	time.Sleep(2 * time.Second) // let the moved partitions catch up
	cancel()
	wg.Wait()
	cl.Close()

	// The longest wait of a record produced after the join and consumed before the
	// end (a record consumed twice counts at its first consumption).
	first := map[string]time.Time{}
	for _, m := range members {
		for _, r := range m.records() {
			key := fmt.Sprintf("%d/%s", r.partition, r.value)
			if at, ok := first[key]; !ok || r.at.Before(at) {
				first[key] = r.at
			}
		}
	}
	for key, at := range first {
		ns, err := strconv.ParseInt(key[strings.Index(key, "tick/")+len("tick/"):], 10, 64)
		if err != nil {
			continue
		}
		if produced := time.Unix(0, ns); produced.After(joined) && at.Sub(produced) > maxLag {
			maxLag = at.Sub(produced)
		}
	}
	for _, m := range members {
		m.leave()
	}
	own.check(b)
	return settle, maxLag
}
