package cli

// The remote size of `petrel log-dirs describe`: a tiered partition's bytes in remote
// storage (KIP-405), which Kafka's DescribeLogDirs does not carry. Petrel's brokers
// answer it in a tagged field of each partition (broker/remote_log_dirs.go, tag 10003,
// a uvarint) that other decoders skip; it is shown as "remoteSize" beside Kafka's
// fields, only for partitions that have it.

import (
	"context"
	"encoding/binary"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteSizeTag is Petrel's DescribeLogDirs partition tag for the remote size.
const remoteSizeTag = 10003

// remoteSizes are the remote sizes each broker answered, by broker, topic and
// partition; a broker that does not answer (or is not Petrel) has none.
func remoteSizes(ctx context.Context, cl *clientcmd.Client, topics []string) map[int32]map[string]map[int32]int64 {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	if len(topics) > 0 {
		details, err := cl.Admin().ListTopics(ctx, topics...)
		if err != nil {
			return nil
		}
		for _, d := range details.Sorted() {
			rt := kmsg.NewDescribeLogDirsRequestTopic()
			rt.Topic = d.Topic
			for p := range d.Partitions {
				rt.Partitions = append(rt.Partitions, p)
			}
			req.Topics = append(req.Topics, rt)
		}
	}
	out := map[int32]map[string]map[int32]int64{}
	for _, shard := range cl.RequestSharded(ctx, req) {
		resp, ok := shard.Resp.(*kmsg.DescribeLogDirsResponse)
		if shard.Err != nil || !ok {
			continue
		}
		for _, d := range resp.Dirs {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					p.UnknownTags.Each(func(k uint32, v []byte) {
						size, n := binary.Uvarint(v)
						if k != remoteSizeTag || n <= 0 {
							return
						}
						if out[shard.Meta.NodeID] == nil {
							out[shard.Meta.NodeID] = map[string]map[int32]int64{}
						}
						if out[shard.Meta.NodeID][t.Topic] == nil {
							out[shard.Meta.NodeID][t.Topic] = map[int32]int64{}
						}
						out[shard.Meta.NodeID][t.Topic][p.Partition] = int64(size)
					})
				}
			}
		}
	}
	return out
}
