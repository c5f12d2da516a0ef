package broker

import (
	"github.com/petrel-broker/petrel/metrics"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
)

// remoteLogStates are the remote logs of the tiered partitions this broker leads, for
// a scrape (Kafka reports its remote log gauges on the leader): the closed local
// segments above the highest copied offset (copy lag), the copied remote segments'
// size and the remote segment records. One replica lock at a time.
func (b *Broker) remoteLogStates() []metrics.RemoteLogState {
	im := b.Image()
	var out []metrics.RemoteLogState
	for _, lp := range b.partitions.all() {
		set := lp.settings.Load()
		if set == nil || !set.segment.RemoteStorageEnable || lp.State().Role != replication.Leader {
			continue
		}
		rs := metrics.RemoteLogState{Topic: lp.Topic, Partition: lp.ID}
		segs := im.RemoteLogSegments(lp.topicID, lp.ID)
		rs.MetadataCount = len(segs)
		rs.SizeBytes, _ = remoteLogSize(im, lp.topicID, lp.ID)
		_ = lp.WithLog(func(l *segment.Log) error { // a stopped replica: no lag
			highest, _ := remoteLogBounds(segs, l.LeaderEpochs().Entries(), l.LogEndOffset())
			local := l.Segments()
			for _, s := range local[:max(len(local)-1, 0)] { // the last is the active segment
				if s.NextOffset-1 > highest && s.NextOffset > s.BaseOffset {
					rs.CopyLagBytes += s.Size
					rs.CopyLagSegments++
				}
			}
			return nil
		})
		out = append(out, rs)
	}
	return out
}
