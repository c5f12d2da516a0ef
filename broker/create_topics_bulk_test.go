package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestBulkCreateInSmallRequests: a bulk creation in many CreateTopics of a few hundred
// partitions each (above createWaitMaxPartitions, so no request waits for replicas to
// open) and of a few (which do), sent one after another through a broker that is not
// the controller, ends with every partition in every broker's Metadata, led, its ISR
// full, every replica open on every broker, and an acks=all write taken by every
// partition (its leader open and both followers fetching).
func TestBulkCreateInSmallRequests(t *testing.T) {
	c := startTestCluster(t, 3, 3, nil)
	via := c.notController()
	adm := newAdmin(t, via)
	sizes := []int32{150, 150, 150, 150, 10, 10, 150, 150}
	total := 0
	var topics []string
	for i, n := range sizes {
		topic := fmt.Sprintf("bulk-%d", i)
		resp, err := adm.CreateTopic(testContext(t), n, 3, nil, topic)
		if err != nil || resp.Err != nil {
			t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
		}
		topics, total = append(topics, topic), total+int(n)
	}
	for i, b := range c.brokers {
		testwait.Until(t, 120*time.Second, fmt.Sprintf("%d replicas open on broker %d", total, i), func() bool {
			return len(b.partitions.all()) == total
		})
		other := newAdmin(t, b)
		testwait.ForWhat(t, 30*time.Second, fmt.Sprintf("every partition led with its ISR full in broker %d's Metadata", i), func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			md, err := other.Metadata(ctx, topics...)
			if err != nil {
				return err
			}
			for j, topic := range topics {
				td := md.Topics[topic]
				if td.Err != nil || len(td.Partitions) != int(sizes[j]) {
					return fmt.Errorf("%s: %v, %d partitions", topic, td.Err, len(td.Partitions))
				}
				for _, p := range td.Partitions {
					if p.Leader < 0 || len(p.ISR) != 3 {
						return fmt.Errorf("%s-%d: leader %d, ISR %v", topic, p.Partition, p.Leader, p.ISR)
					}
				}
			}
			return nil
		})
	}
	cl := newClient(t, via, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var records []*kgo.Record
	for j, topic := range topics {
		for p := int32(0); p < sizes[j]; p++ {
			records = append(records, &kgo.Record{Topic: topic, Partition: p, Value: []byte("v")})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("acks=all write to every partition: %v", err)
	}
}
