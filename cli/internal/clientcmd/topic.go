package clientcmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ProducerSettings are the producer flags shared by produce and perf produce.
type ProducerSettings struct {
	Acks        string // --acks as given
	Compression string // --compression as given
}

// Options maps the settings to kgo producer options. Acks other than all need
// idempotence off: an idempotent producer must wait for every in-sync replica.
func (s ProducerSettings) Options() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	switch strings.ToLower(s.Acks) {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("bad --acks %q: want all, -1, 1 or 0", s.Acks)
	}
	codec, err := parseCompression(s.Compression)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

// parseCompression maps a Kafka compression.type name to a kgo codec.
func parseCompression(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("bad --compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// CheckTopic asks for the topic's metadata (letting the broker auto-create it when
// allowCreate and the broker allow it) and fails clearly when the topic does not exist
// or the partition (unless -1) is out of range.
func CheckTopic(parent context.Context, cl *Client, topic string, partition int32, allowCreate bool) error {
	ctx, cancel := cl.RequestContext(parent)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = allowCreate
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("metadata for topic %q: %w", topic, cl.Explain(err))
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata for topic %q: the broker answered for %d topics", topic, len(resp.Topics))
	}
	t := resp.Topics[0]
	switch err := kerr.ErrorForCode(t.ErrorCode); {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		if allowCreate {
			return fmt.Errorf("topic %q does not exist and the cluster does not create topics on first use (auto.create.topics.enable=false); create it with `petrel topics create %s`", topic, topic)
		}
		return fmt.Errorf("topic %q does not exist", topic)
	case errors.Is(err, kerr.LeaderNotAvailable):
		return nil // being created; the client waits for a leader
	case err != nil:
		return fmt.Errorf("topic %q: %w", topic, err)
	}
	if partition >= 0 && int(partition) >= len(t.Partitions) {
		return fmt.Errorf("partition %d does not exist: topic %q has %d partitions", partition, topic, len(t.Partitions))
	}
	return nil
}
