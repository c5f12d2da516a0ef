package cli

// The eligible leader replicas of `topics describe` (KIP-966): as kafka-topics.sh 4.x,
// the partitions are read with DescribeTopicPartitions (key 75), page by page, and each
// partition line ends with Elr and LastKnownElr. A cluster without the API (older
// Kafka or Petrel) is described without them.

import (
	"context"
	"errors"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionELR is one partition's ELR and last known ELR.
type partitionELR struct {
	ELR, LastKnownELR []int32
}

// describeELRs pages through DescribeTopicPartitions for names (every topic when none)
// and returns each partition's ELR by topic and partition; ok is false when the cluster
// does not serve the API.
func describeELRs(ctx context.Context, cl *clientcmd.Client, names []string) (elrs map[string]map[int32]partitionELR, ok bool, err error) {
	elrs = map[string]map[int32]partitionELR{}
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for {
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		for _, name := range names {
			t := kmsg.NewDescribeTopicPartitionsRequestTopic()
			t.Topic = name
			req.Topics = append(req.Topics, t)
		}
		req.Cursor = cursor
		resp, err := req.RequestWith(ctx, cl.Client)
		if err != nil {
			if errors.Is(err, kerr.UnsupportedVersion) || errors.Is(err, kerr.InvalidRequest) {
				return nil, false, nil
			}
			return nil, false, err
		}
		for _, t := range resp.Topics {
			if t.ErrorCode != 0 || t.Topic == nil {
				continue
			}
			byPartition := elrs[*t.Topic]
			if byPartition == nil {
				byPartition = map[int32]partitionELR{}
				elrs[*t.Topic] = byPartition
			}
			for _, p := range t.Partitions {
				byPartition[p.Partition] = partitionELR{ELR: orEmpty(p.EligibleLeaderReplicas), LastKnownELR: orEmpty(p.LastKnownELR)}
			}
		}
		if resp.NextCursor == nil {
			return elrs, true, nil
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
	}
}
