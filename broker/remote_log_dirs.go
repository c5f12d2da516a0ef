package broker

import (
	"encoding/binary"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// remoteLogSize is the bytes of a partition's copied remote segments in im, and
// whether it has any remote segment record at all.
func remoteLogSize(im *metadata.Image, topicID metadata.Uuid, partition int32) (int64, bool) {
	segs := im.RemoteLogSegments(topicID, partition)
	var size int64
	for _, s := range segs {
		if s.State == metadata.CopySegmentFinished {
			size += int64(s.SizeInBytes)
		}
	}
	return size, len(segs) > 0
}

// tagRemoteSize sets remoteSizeTag on a DescribeLogDirs partition of a tiered topic
// (remote.storage.enable=true, or remote segments left): the same value on every
// replica, read from the image.
func tagRemoteSize(tags *kmsg.Tags, im *metadata.Image, lp *localPartition) {
	size, any := remoteLogSize(im, lp.topicID, lp.ID)
	if set := lp.settings.Load(); !any && (set == nil || !set.segment.RemoteStorageEnable) {
		return
	}
	tags.Set(remoteSizeTag, binary.AppendUvarint(nil, uint64(size)))
}
