package group

// Consumer lag (kafka_consumergroup_lag), what kafka-lag-exporter and Burrow compute
// from outside: for every committed offset of a group, the partition's end (the high
// watermark, what a read_uncommitted ListOffsets latest answers) minus that offset.
// The shard lists its committed offsets; the caller finds the ends and asks Lags.

// CommittedOffset is one group's committed offset on one partition.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// PartitionLag is one group's lag on one partition: the partition's end minus the
// group's committed offset, never below 0.
type PartitionLag struct {
	Group     string
	Topic     string
	Partition int32
	Lag       int64
}

// CommittedOffsets lists the committed offsets of every group of this shard, as
// OffsetFetch of all topics answers them; partitions without one (-1) are left out.
func (s *Shard) CommittedOffsets() []CommittedOffset {
	var out []CommittedOffset
	for _, g := range s.ListGroups(nil, nil) {
		for _, t := range s.OffsetFetch(g.Group, nil, false).Topics {
			for _, p := range t.Partitions {
				if p.Offset >= 0 {
					out = append(out, CommittedOffset{Group: g.Group, Topic: t.Topic, Partition: p.Partition, Offset: p.Offset})
				}
			}
		}
	}
	return out
}

// Lags is the lag of each committed offset whose partition's end is known (end
// reports it; ok false leaves the partition out): end minus the committed offset,
// 0 when the group has committed at or past the end (a truncated log, a commit ahead
// of replication).
func Lags(committed []CommittedOffset, end func(topic string, partition int32) (int64, bool)) []PartitionLag {
	out := make([]PartitionLag, 0, len(committed))
	for _, c := range committed {
		if e, ok := end(c.Topic, c.Partition); ok {
			out = append(out, PartitionLag{Group: c.Group, Topic: c.Topic, Partition: c.Partition, Lag: max(e-c.Offset, 0)})
		}
	}
	return out
}
