package integration

// message.timestamp.type=LogAppendTime: the leader stamps each appended batch with its
// append time (attribute bit 3, maxTimestamp), followers store the stamped batch as it
// is, consumers see the append time as every record's timestamp, and ListOffsets looks
// records up by it. The client is confluent-kafka-python (librdkafka), as a user's.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// confluent-kafka's timestamp types (msg.timestamp()[0]).
const (
	confluentCreateTime    = 1
	confluentLogAppendTime = 2
)

func TestConfluentPython_LogAppendTime(t *testing.T) {
	s := confluentClient(t)
	t.Parallel()
	c := StartCluster(t, 2)
	topic := "confluent-append-time"
	c.CreateTopicRF(t, topic, 1, 2, map[string]*string{"message.timestamp.type": kmsg.StringPtr("LogAppendTime")})
	const createTime = 1_000_000_000_000 // 2001: long before any append time
	start := time.Now().UnixMilli()
	out := s.run(t, "appendtime", strings.Join(c.Addrs(), ","), topic, "3", strconv.Itoa(createTime))
	end := time.Now().UnixMilli()

	type stamped struct{ tstype, ts int64 }
	delivered, consumed := map[int64]stamped{}, map[int64]stamped{}
	lookups := map[int64]int64{} // timestamp -> offset
	var order []int64            // lookup timestamps in the order asked
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		nums := make([]int64, len(f))
		for i := 1; i < len(f); i++ {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			nums[i] = n
		}
		switch {
		case len(f) == 4 && f[0] == "delivered":
			delivered[nums[1]] = stamped{nums[2], nums[3]}
		case len(f) == 4 && f[0] == "consumed":
			consumed[nums[1]] = stamped{nums[2], nums[3]}
		case len(f) == 3 && f[0] == "lookup":
			lookups[nums[1]] = nums[2]
			order = append(order, nums[1])
		default:
			t.Fatalf("unexpected line %q in:\n%s", line, out)
		}
	}
	if len(delivered) != 9 || len(consumed) != 9 {
		t.Fatalf("%d records delivered and %d consumed, expected 9 each:\n%s", len(delivered), len(consumed), out)
	}
	for o := range int64(9) {
		d, r := delivered[o], consumed[o]
		if d.tstype != confluentLogAppendTime || r.tstype != confluentLogAppendTime {
			t.Errorf("offset %d: delivered with timestamp type %d, consumed with %d; expected LogAppendTime (%d)", o, d.tstype, r.tstype, confluentLogAppendTime)
		}
		if d.ts < start || d.ts > end || r.ts != d.ts {
			t.Errorf("offset %d: delivered with timestamp %d, consumed with %d; expected the append time, within [%d, %d], not the producer's %d",
				o, d.ts, r.ts, start, end, createTime)
		}
		if o > 0 && d.ts < delivered[o-1].ts {
			t.Errorf("offset %d: append time %d before offset %d's %d", o, d.ts, o-1, delivered[o-1].ts)
		}
	}
	// A lookup by timestamp finds the first record appended at or after it.
	for _, ts := range order {
		want := int64(-1)
		for o := range int64(9) {
			if delivered[o].ts >= ts {
				want = o
				break
			}
		}
		if lookups[ts] != want {
			t.Errorf("offsets_for_times(%d) = %d, expected %d (delivered: %v)", ts, lookups[ts], want, delivered)
		}
	}
	if lookups[createTime] != 0 || lookups[order[len(order)-1]] != -1 {
		t.Errorf("lookups %v: the producer's timestamp should find offset 0 and a time past the last append -1", lookups)
	}
	// Max timestamp (-3): the first record of the first batch stamped last.
	last := delivered[8].ts
	first := int64(8)
	for first > 0 && delivered[first-1].ts == last {
		first--
	}
	leader := 0
	if leads(c, 0, topic, 0) != nil {
		leader = 1
	}
	if off, ts, err := listOffsetAndTimestamp(c, leader, topic, 0, -3); err != nil || off != first || ts != last {
		t.Errorf("ListOffsets max timestamp: offset %d timestamp %d (%v), expected %d and %d", off, ts, err, first, last)
	}

	// Both replicas hold the leader's stamped batches, byte for byte.
	var logs [2][]byte
	testwait.For(t, 10*time.Second, func() error {
		for i := range logs {
			hw, data, err := replicaLog(t, c, i, topic, 0)
			if err != nil {
				return err
			}
			if hw != 9 {
				return fmt.Errorf("node-%d: high watermark %d", i, hw)
			}
			logs[i] = data
		}
		return nil
	})
	if string(logs[0]) != string(logs[1]) {
		t.Fatal("the replicas' logs differ")
	}
	for b := logs[0]; len(b) > 0; {
		base, _, size, ok := batchAt(b)
		if !ok {
			t.Fatalf("a torn batch in %x", b)
		}
		attrs := binary.BigEndian.Uint16(b[21:])
		maxTs := int64(binary.BigEndian.Uint64(b[35:]))
		if attrs&0x08 == 0 || maxTs != delivered[base].ts {
			t.Errorf("batch at %d: attributes %#x, maxTimestamp %d; expected the LogAppendTime bit and %d", base, attrs, maxTs, delivered[base].ts)
		}
		if crc := broker.RecordBatchCRC(b[21:size]); crc != binary.BigEndian.Uint32(b[17:]) {
			t.Errorf("batch at %d: the CRC does not match the stamped batch", base)
		}
		b = b[size:]
	}
}

// listOffsetAndTimestamp asks node i for ListOffsets v7 of timestamp (-3 max timestamp)
// and returns the offset and timestamp answered.
func listOffsetAndTimestamp(c *Cluster, i int, topic string, partition int32, timestamp int64) (int64, int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 7, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, timestamp, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	resp, err := requestAt(ctx, c, i, req)
	if err != nil {
		return -1, -1, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return -1, -1, fmt.Errorf("ListOffsets answered %+v", lr.Topics)
	}
	sp := lr.Topics[0].Partitions[0]
	if sp.ErrorCode != 0 {
		return -1, -1, kerr.ErrorForCode(sp.ErrorCode)
	}
	return sp.Offset, sp.Timestamp, nil
}
