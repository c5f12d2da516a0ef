package integration

// Exactly-once consume-transform-produce through sarama's legacy transactional
// offsets API (AddMessageToTxn(msg, groupID, nil): no member id, generation -1, as
// Java's sendOffsetsToTransaction(offsets, String groupId)) while a sarama
// ConsumerGroup on that group id is active. Kafka accepts such a TxnOffsetCommit
// whatever the group's members (ClassicGroup.validateOffsetCommit exempts
// transactional commits from the members-only rule); docs/transactions.md.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/IBM/sarama"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
)

// saramaEOSRecords is how many records each run transforms, one transaction each.
const saramaEOSRecords = 8

// saramaEOSHandler is a ConsumerGroupHandler that, for each record of its claim, runs
// one transaction of prod: the transformed record to out and the record's offset
// through AddMessageToTxn under group. It never marks a message: the transactions
// commit the offsets. After want records, or at the first failure, it reports on done.
type saramaEOSHandler struct {
	prod       sarama.SyncProducer
	group, out string
	want       int
	done       chan error // one report, buffered
	mu         sync.Mutex
	count      int  // records transformed; guarded by mu
	reported   bool // guarded by mu
}

func (h *saramaEOSHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaEOSHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaEOSHandler) transformed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count
}

func (h *saramaEOSHandler) report(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.reported {
		h.reported = true
		h.done <- err
	}
}

func (h *saramaEOSHandler) ConsumeClaim(_ sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for msg := range claim.Messages() {
		if err := h.transform(msg); err != nil {
			h.report(fmt.Errorf("record at offset %d: %w", msg.Offset, err))
			return nil
		}
		h.mu.Lock()
		h.count++
		finished := h.count == h.want
		h.mu.Unlock()
		if finished {
			h.report(nil)
			return nil
		}
	}
	return nil
}

// transform is one consume-transform-produce transaction for msg.
func (h *saramaEOSHandler) transform(msg *sarama.ConsumerMessage) error {
	if err := h.prod.BeginTxn(); err != nil {
		return fmt.Errorf("BeginTxn: %w", err)
	}
	_, _, err := h.prod.SendMessage(&sarama.ProducerMessage{Topic: h.out, Value: sarama.StringEncoder("out-" + string(msg.Value))})
	if err == nil {
		err = h.prod.AddMessageToTxn(msg, h.group, nil)
	}
	if err == nil {
		err = h.prod.CommitTxn()
	}
	if err != nil {
		if abortErr := h.prod.AbortTxn(); abortErr != nil {
			err = errors.Join(err, fmt.Errorf("AbortTxn: %w", abortErr))
		}
		return err
	}
	return nil
}

// TestTransactionSarama_LegacyOffsetsWhileGroupActive runs the consume-transform-produce
// loop at each sarama version that changes TxnOffsetCommit's version (0.11: v0, 2.0:
// v1, 2.1: v2, the default 2.8: v3 with generation -1 and no member id), each with its
// own group, topics and transactional id. The loop runs inside the active group's
// claim; every record's transaction must commit, the group's committed offset must be
// the end of the input, and read_committed must see each transformed record once.
func TestTransactionSarama_LegacyOffsetsWhileGroupActive(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 1, append(append(txnOptions(), groupOptions()...),
		WithProperty("offsets.topic.num.partitions", "3"))...)
	for _, tc := range []struct {
		name    string
		version sarama.KafkaVersion
	}{
		{"v0", sarama.V0_11_0_0},
		{"v1", sarama.V2_0_0_0},
		{"v2", sarama.V2_1_0_0},
		{"v3-anonymous", sarama.V2_8_0_0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "sarama-eos-" + tc.name
			in, out, group := prefix+"-in", prefix+"-out", prefix+"-group"
			c.CreateTopic(t, in, 1, nil)
			c.CreateTopic(t, out, 1, nil)
			produceN(t, c, in, saramaEOSRecords)

			pcfg := sarama.NewConfig()
			pcfg.Version = tc.version
			pcfg.ClientID = prefix + "-producer"
			pcfg.Producer.Idempotent = true
			pcfg.Producer.RequiredAcks = sarama.WaitForAll
			pcfg.Producer.Return.Successes = true
			pcfg.Producer.Transaction.ID = prefix + "-txn"
			pcfg.Net.MaxOpenRequests = 1
			prod, err := bounded(t, saramaTimeout, "NewSyncProducer", func() (sarama.SyncProducer, error) {
				return sarama.NewSyncProducer(c.Addrs(), pcfg)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { prod.Close() })

			cg, err := bounded(t, saramaTimeout, "NewConsumerGroup", func() (sarama.ConsumerGroup, error) {
				return sarama.NewConsumerGroup(c.Addrs(), group, saramaGroupConfig(prefix+"-consumer", nil))
			})
			if err != nil {
				t.Fatal(err)
			}
			h := &saramaEOSHandler{prod: prod, group: group, out: out, want: saramaEOSRecords, done: make(chan error, 1)}
			ctx, cancel := context.WithCancel(testContext(t))
			finished := make(chan struct{})
			go func() {
				defer close(finished)
				runSaramaGroup(ctx, cg, in, h)
			}()
			defer func() {
				cancel()
				bounded(t, saramaTimeout, "ConsumerGroup.Close", func() (struct{}, error) { return struct{}{}, cg.Close() })
				<-finished
			}()
			select {
			case err := <-h.done:
				if err != nil {
					t.Fatalf("consume-transform-produce in the active group: %v", err)
				}
			case <-ctx.Done():
				t.Fatalf("transformed %d of %d records: %v", h.transformed(), saramaEOSRecords, ctx.Err())
			}
			// The member is still in the group: the offsets came from the transactions
			// (the last one's COMMIT marker may still be on its way).
			testwait.For(t, groupWait, func() error {
				offsets, err := c.Admin(t).FetchOffsets(testContext(t), group)
				if err != nil {
					return err
				}
				if o, ok := offsets.Lookup(in, 0); !ok || o.Err != nil || o.At != saramaEOSRecords {
					return fmt.Errorf("committed offset %+v (found %v), want %d", o, ok, saramaEOSRecords)
				}
				return nil
			})
			got := consumeTxnTopic(t, c, out, kgo.ReadCommitted(), saramaEOSRecords)
			var want []string
			for i := range saramaEOSRecords {
				want = append(want, fmt.Sprintf("out-value-%d", i))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read_committed %s got %v, want %v", out, got, want)
			}
		})
	}
}
