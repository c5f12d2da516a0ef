package broker

// DescribeLogDirs (key 35), v0-5. This broker's one log directory (--data-dir/logs) with
// every local replica (or those named): its size in bytes, its offset lag (high
// watermark minus log end offset, never negative; Kafka's definition for a current
// log) and is_future (always false: Petrel has no intra-broker moves). v4+ adds the
// file system's total and usable bytes; v5+ is_cordoned, this broker's cordoned.log.dirs
// in the metadata log (KIP-1066, metadata/decommission.go). A log directory offline after a failed write
// (offline_replicas.go) is answered KAFKA_STORAGE_ERROR, as Kafka answers an offline one.
// A tiered partition carries its remote size in a Petrel tagged field (v2+).

import (
	"context"
	"slices"
	"syscall"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeLogDirs, 0, 5, (*Broker).handleDescribeLogDirs, apiOpts{
		authorize: clusterOnly(auth.OpDescribe),
		fillError: fillErrorDescribeLogDirs,
	})
}

func (b *Broker) handleDescribeLogDirs(ctx context.Context, req *rpc.Request) rpc.Result {
	return rpc.Respond(b.describeLogDirs(req.Body.(*kmsg.DescribeLogDirsRequest)))
}

func (b *Broker) describeLogDirs(r *kmsg.DescribeLogDirsRequest) *kmsg.DescribeLogDirsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	dir := kmsg.NewDescribeLogDirsResponseDir()
	dir.Dir = b.cfg.logsDir()
	dir.IsCordoned = b.Image().Cordoned(b.cfg.NodeID)
	if b.offline.dirFailure() != nil {
		dir.ErrorCode = kerr.KafkaStorageError.Code // offline after a failed write (offline_replicas.go)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir.Dir, &fs); err == nil {
		dir.TotalBytes = int64(fs.Blocks) * int64(fs.Bsize)
		dir.UsableBytes = int64(fs.Bavail) * int64(fs.Bsize)
	} else {
		dir.TotalBytes, dir.UsableBytes = -1, -1
	}
	wanted := func(topic string, partition int32) bool {
		if r.Topics == nil {
			return true
		}
		for _, t := range r.Topics {
			if t.Topic == topic && slices.Contains(t.Partitions, partition) {
				return true
			}
		}
		return false
	}
	parts := b.partitions.allSorted()
	for _, lp := range parts {
		if !wanted(lp.Topic, lp.ID) {
			continue
		}
		if n := len(dir.Topics); n == 0 || dir.Topics[n-1].Topic != lp.Topic {
			rt := kmsg.NewDescribeLogDirsResponseDirTopic()
			rt.Topic = lp.Topic
			dir.Topics = append(dir.Topics, rt)
		}
		st := lp.State()
		rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
		rp.Partition, rp.Size = lp.ID, lp.LogSize()
		rp.OffsetLag = max(st.HighWatermark-st.LogEndOffset, 0)
		if r.Version >= 2 { // flexible: Petrel's remote size tag (remote_log_dirs.go)
			tagRemoteSize(&rp.UnknownTags, b.Image(), lp)
		}
		dir.Topics[len(dir.Topics)-1].Partitions = append(dir.Topics[len(dir.Topics)-1].Partitions, rp)
	}
	resp.Dirs = append(resp.Dirs, dir)
	return resp
}

// fillErrorDescribeLogDirs is DescribeLogDirs's apiOpts.fillError.
func fillErrorDescribeLogDirs(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	resp.(*kmsg.DescribeLogDirsResponse).ErrorCode = code
}
