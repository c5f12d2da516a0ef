package integration

// BenchmarkShareGroupVsConsumerGroup: records per second through a share group of four
// franz-go share consumers (each record acquired, delivered and accepted one by one)
// against a consumer group of four franz-go consumers (KIP-848, offsets committed) on
// the same topic in the same run: 4 partitions, 1 KiB incompressible records,
// compression off, written once before both groups read them from the start.
//
// Run with:
//
//	go test ./integration/ -run '^$' -bench 'BenchmarkShareGroupVsConsumerGroup' -benchtime 3x -timeout 30m -v
//
// Each iteration reads the whole topic with a new group of each kind, its members
// paused until the group settled, timed from their resumption to the last record; the
// reported share/consumer is the ratio of their medians.

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	shareBenchRecords    = 100_000
	shareBenchValueBytes = 1024
	shareBenchMembers    = 4
)

func BenchmarkShareGroupVsConsumerGroup(b *testing.B) {
	c := StartCluster(b, 1, shareOptions()...)
	topic := "share-bench"
	c.CreateTopic(b, topic, shareBenchMembers, nil)
	produceRandom(b, c, topic, shareBenchRecords, shareBenchValueBytes)

	var shareRates, groupRates []float64
	for i := range b.N {
		shareGroup := fmt.Sprintf("share-bench-%d", i)
		setShareGroupConfigs(b, c, shareGroup, nil)
		shareRates = append(shareRates, readAllRate(b, c, topic, func(id string) []kgo.Opt {
			return []kgo.Opt{kgo.ShareGroup(shareGroup), kgo.ClientID(id)}
		}, func(adm *kadm.Client) error {
			d, err := adm.DescribeShareGroups(testContext(b), shareGroup)
			if err != nil {
				return err
			}
			return settled(len(d[shareGroup].Members), func(i int) kadm.TopicsSet { return d[shareGroup].Members[i].Assignment })
		}))
		consumerGroup := fmt.Sprintf("consumer-bench-%d", i)
		groupRates = append(groupRates, readAllRate(b, c, topic, func(id string) []kgo.Opt {
			return []kgo.Opt{kgo.ConsumerGroup(consumerGroup), kgo.ServerSideBalancer(), kgo.ClientID(id),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
		}, func(adm *kadm.Client) error {
			d, err := adm.DescribeConsumerGroups(testContext(b), consumerGroup)
			if err != nil {
				return err
			}
			return settled(len(d[consumerGroup].Members), func(i int) kadm.TopicsSet { return d[consumerGroup].Members[i].Assignment })
		}))
	}
	share, group := medianFloat(shareRates), medianFloat(groupRates)
	b.ReportMetric(share, "share-records/s")
	b.ReportMetric(group, "consumer-records/s")
	b.ReportMetric(share/group, "share/consumer")
	b.Logf("share group %.0f records/s, consumer group %.0f records/s: %.2f×", share, group, share/group)
}

// settled reports whether members members, each with the assignment of member(i),
// each hold at least one partition and together all of them.
func settled(members int, assignment func(i int) kadm.TopicsSet) error {
	held := map[int32]bool{}
	for i := range members {
		n := 0
		assignment(i).Each(func(_ string, p int32) { held[p] = true; n++ })
		if n == 0 {
			return fmt.Errorf("member %d has no partition", i)
		}
	}
	if members != shareBenchMembers || len(held) != shareBenchMembers {
		return fmt.Errorf("%d members hold %d partitions", members, len(held))
	}
	return nil
}

// readAllRate starts four members built by opts with the topic paused, waits until
// settled (every member assigned), resumes them, and returns records per second from
// then until together they were delivered every record of topic: the groups' joins
// and rebalances, which differ by protocol, are left out.
func readAllRate(b *testing.B, c *Cluster, topic string, opts func(id string) []kgo.Opt, settled func(*kadm.Client) error) float64 {
	b.Helper()
	var n atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var clients []*kgo.Client
	for m := range shareBenchMembers {
		cl := c.Client(b, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.FetchMaxBytes(16 << 20)}, opts(fmt.Sprint("m", m))...)...)
		cl.PauseFetchTopics(topic)
		clients = append(clients, cl)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollRecords(ctx, 1000)
				n.Add(int64(fs.NumRecords()))
			}
		}()
	}
	adm := c.Admin(b)
	testwait.For(b, time.Minute, func() error { return settled(adm) })
	if got := n.Load(); got > 0 {
		b.Fatalf("%d records delivered while paused", got)
	}
	start := time.Now()
	for _, cl := range clients {
		cl.ResumeFetchTopics(topic)
	}
	testwait.For(b, 10*time.Minute, func() error {
		if got := n.Load(); got < shareBenchRecords {
			return fmt.Errorf("%d of %d records read", got, shareBenchRecords)
		}
		return nil
	})
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	return float64(shareBenchRecords) / elapsed.Seconds()
}

// produceRandom writes n records of size incompressible bytes, uncompressed.
func produceRandom(b *testing.B, c *Cluster, topic string, n, size int) {
	b.Helper()
	cl := c.Client(b, kgo.ProducerBatchCompression(kgo.NoCompression()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		v := make([]byte, size)
		rand.Read(v)
		recs[i] = &kgo.Record{Topic: topic, Value: v}
	}
	if err := cl.ProduceSync(testContext(b), recs...).FirstErr(); err != nil {
		b.Fatalf("produce: %v", err)
	}
}

// medianFloat is the median of xs (the upper one of an even count).
func medianFloat(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
