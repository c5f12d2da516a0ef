package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/fsm"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCheckpointSequences is the property test of the log directory's checkpoints
// (checkpoints.go): random sequences of appends, DeleteRecords (through the handler's
// own code), rolls, retention, periodic checkpoints, replicas going offline and
// reopening, crashes, failed starts, starts that open only some replicas, and clean
// shutdowns, on the partition manager a start creates (no Raft, no listeners). After
// every step, on every open replica: the log start offset never moved backwards, and no
// record below what DeleteRecords or retention removed is served.
func TestCheckpointSequences(t *testing.T) {
	sequences, steps := 24, 40
	if testing.Short() {
		sequences = 6
	}
	for seed := range uint64(sequences) {
		var trace []string
		ok := t.Run(fmt.Sprint("seed-", seed), func(t *testing.T) {
			runCheckpointSequence(t, seed, steps, &trace)
		})
		if !ok {
			t.Logf("seed %d steps:\n  %s", seed, strings.Join(trace, "\n  "))
			return
		}
	}
}

// checkpointPartitions is how many partitions the sequences' topic has.
const checkpointPartitions = 2

// checkpointNode is one node's log directory, driven as Start, the reconciler, the
// maintenance loop, the DeleteRecords handler, Shutdown and Kill drive it.
type checkpointNode struct {
	t        *testing.T
	dir      string
	b        *Broker
	topic    *metadata.Topic
	settings *topicSettings
	epoch    int32 // leader epoch of the current start
	up       bool
	// deleted is, per partition, the offset below which records were removed (by
	// DeleteRecords or retention): never to be served again. lastStart is the log start
	// offset last seen.
	deleted, lastStart [checkpointPartitions]int64
}

func newCheckpointNode(t *testing.T) *checkpointNode {
	dir := t.TempDir()
	cfg := segment.DefaultConfig()
	cfg.SegmentBytes = 400 // a roll every few records
	n := &checkpointNode{t: t, dir: dir, topic: &metadata.Topic{Name: "seq", ID: metadata.Uuid{7, 1}},
		settings: &topicSettings{segment: cfg, syncEveryAppend: true, minInsync: 1, maxMessageBytes: 1 << 20}}
	n.b = &Broker{cfg: Config{DataDir: dir, Properties: map[string]string{}}, logger: hclog.NewNullLogger(),
		machine: fsm.New(), offline: newOfflineReplicas(), records: newRecordValidator(0), segFiles: segment.NewFileCache(16),
		fetchers: replication.NewFetchers(replication.FetcherConfig{})}
	n.b.metrics = n.b.newMetrics()
	return n
}

// part returns partition id's open replica, or nil.
func (n *checkpointNode) part(id int32) *localPartition {
	if !n.up {
		return nil
	}
	return n.b.partitions.get(n.topic.Name, id)
}

// open opens partition id as the reconciler does and makes it the leader of its own ISR.
func (n *checkpointNode) open(id int32) error {
	lp, err := n.b.partitions.open(n.topic, id, n.settings, newPartitionMetadataFiles())
	if err != nil {
		return err
	}
	return lp.BecomeLeaderOf(n.epoch, n.epoch, []int32{0}, []int32{0})
}

// start creates the partition manager as Start does and opens the partitions in open.
func (n *checkpointNode) start(open []int32) error {
	if err := ensureDir(n.b.cfg.logsDir()); err != nil {
		return err
	}
	pm, err := newPartitionManager(n.b)
	if err != nil {
		return err
	}
	n.b.partitions, n.up = pm, true
	n.epoch++
	for _, id := range open {
		if err := n.open(id); err != nil {
			return err
		}
	}
	return nil
}

// reconciled opens every partition not open yet and ends the first reconciliation.
func (n *checkpointNode) reconciled() error {
	live := map[segment.TopicPartition]bool{}
	for id := range int32(checkpointPartitions) {
		live[segment.TopicPartition{Topic: n.topic.Name, Partition: id}] = true
		if n.part(id) == nil {
			if err := n.open(id); err != nil {
				return err
			}
		}
	}
	pm := n.b.partitions
	if !pm.straysRemoved {
		pm.straysRemoved = true
		pm.removeStrays(live)
		pm.forgetNotHosted(live)
	}
	return nil
}

// appendRecords appends count one-record batches to partition id.
func (n *checkpointNode) appendRecords(id int32, count int) error {
	var records []byte
	for range count {
		records = append(records, oneRecordBatch()...)
	}
	_, err := n.part(id).AppendAsLeader(records, 1)
	return err
}

// deleteRecords asks the DeleteRecords handler's local step to delete partition id's
// records before offset.
func (n *checkpointNode) deleteRecords(id int32, offset int64) error {
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = n.topic.Name
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = id, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, _ := n.b.deleteRecordsLocal(req)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("delete records before %d: error code %d", offset, code)
	}
	n.deleted[id] = max(n.deleted[id], offset)
	return nil
}

// retention deletes partition id's oldest segments while the log is over limit bytes.
func (n *checkpointNode) retention(id int32, limit int64) error {
	lp := n.part(id)
	lp.WithLog(func(l *segment.Log) error {
		cfg := l.Config()
		cfg.RetentionBytes = limit
		l.SetConfig(cfg)
		return nil
	})
	res, err := lp.EnforceRetention()
	lp.WithLog(func(l *segment.Log) error { l.SetConfig(n.settings.segment); return nil })
	if err != nil {
		return err
	}
	n.deleted[id] = max(n.deleted[id], res.LogStartOffset)
	return nil
}

// check verifies the invariants on every open replica.
func (n *checkpointNode) check() error {
	for id := range int32(checkpointPartitions) {
		lp := n.part(id)
		if lp == nil {
			continue
		}
		st := lp.State()
		if st.LogStartOffset < n.lastStart[id] {
			return fmt.Errorf("partition %d: log start offset %d moved back from %d", id, st.LogStartOffset, n.lastStart[id])
		}
		if st.LogStartOffset < n.deleted[id] {
			return fmt.Errorf("partition %d: log start offset %d below the deleted %d", id, st.LogStartOffset, n.deleted[id])
		}
		n.lastStart[id] = st.LogStartOffset
		if n.deleted[id] > 0 {
			if _, err := lp.Read(n.deleted[id]-1, 1<<20, -1, replication.LeaderOnly); !errors.Is(err, segment.ErrOffsetOutOfRange) {
				return fmt.Errorf("partition %d: a read of deleted offset %d: %v, want out of range", id, n.deleted[id]-1, err)
			}
		}
	}
	return nil
}

// runCheckpointSequence runs steps random steps from seed, recording each in trace.
func runCheckpointSequence(t *testing.T, seed uint64, steps int, trace *[]string) {
	rng := rand.New(rand.NewPCG(seed, 17))
	n := newCheckpointNode(t)
	t.Cleanup(func() {
		if n.up {
			n.b.partitions.abandon()
		}
	})
	step := func(format string, args ...any) { *trace = append(*trace, fmt.Sprintf(format, args...)) }
	step("start, every partition open")
	if err := n.start(nil); err != nil {
		t.Fatal(err)
	}
	if err := n.reconciled(); err != nil {
		t.Fatal(err)
	}
	for range steps {
		id := int32(rng.IntN(checkpointPartitions))
		var err error
		switch {
		case !n.up:
			switch rng.IntN(3) {
			case 0:
				step("failed start")
				var pm *partitionManager
				if pm, err = newPartitionManager(n.b); err == nil {
					pm.abandon() // what Start does when it fails
				}
			default:
				var open []int32
				for p := range int32(checkpointPartitions) {
					if rng.IntN(2) == 0 {
						open = append(open, p)
					}
				}
				step("start, partitions %v open", open)
				err = n.start(open)
			}
		case n.part(id) == nil:
			switch rng.IntN(4) {
			case 0:
				step("open partition %d", id)
				err = n.open(id)
			case 1:
				step("first reconciliation: every partition open")
				err = n.reconciled()
			case 2:
				step("periodic checkpoint")
				err = n.b.partitions.checkpoint()
			default:
				step("crash")
				n.b.partitions.abandon()
				n.up = false
			}
		default:
			lp := n.part(id)
			switch r := rng.IntN(20); {
			case r < 7:
				count := 1 + rng.IntN(4)
				step("append %d records to partition %d", count, id)
				err = n.appendRecords(id, count)
			case r < 10:
				st := lp.State()
				if st.HighWatermark > st.LogStartOffset {
					offset := st.LogStartOffset + 1 + rng.Int64N(st.HighWatermark-st.LogStartOffset)
					step("delete records of partition %d before %d", id, offset)
					err = n.deleteRecords(id, offset)
				}
			case r < 11:
				step("roll partition %d", id)
				err = lp.WithLog(func(l *segment.Log) error { return l.Roll() })
			case r < 12:
				limit := rng.Int64N(lp.LogSize() + 1)
				step("retention of partition %d to %d bytes", id, limit)
				err = n.retention(id, limit)
			case r < 14:
				step("periodic checkpoint")
				err = n.b.partitions.checkpoint()
			case r < 15:
				step("partition %d offline", id)
				n.b.partitions.remove(segment.TopicPartition{Topic: n.topic.Name, Partition: id}, false)
			case r < 17:
				step("crash")
				n.b.partitions.abandon()
				n.up = false
			default:
				step("clean shutdown")
				err = n.b.partitions.close()
				n.up = false
			}
		}
		if err != nil {
			t.Fatalf("step %d (%s): %v", len(*trace), (*trace)[len(*trace)-1], err)
		}
		if err := n.check(); err != nil {
			t.Fatalf("after step %d (%s): %v", len(*trace), (*trace)[len(*trace)-1], err)
		}
	}
	if !n.up {
		step("start, every partition open")
		if err := n.start(nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.reconciled(); err != nil {
		t.Fatal(err)
	}
	if err := n.check(); err != nil {
		t.Fatalf("at the end: %v", err)
	}
}
