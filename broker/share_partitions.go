package broker

// The share-partition leader's wiring (KIP-932, shareleader.Manager): which replicas
// this broker leads, by topic id; the share coordinators' Persister; a share group's
// settings; leader hints for the partitions a share fetch finds led elsewhere; and
// dropping the share state of partitions no longer led here after each metadata
// change (a new leader reloads it from __share_group_state).

import (
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/metrics"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/twmb/franz-go/pkg/kerr"
)

// newShareManager starts the share-partition manager. Its Persister (the share
// coordinators', share_persister.go) and group settings (share_group_configs.go) are
// read at each use.
func newShareManager(b *Broker) *shareleader.Manager {
	return shareleader.New(shareleader.Config{
		Persister:        b.persister,
		Replicas:         shareReplicas{b},
		GroupConfig:      b.shareGroupConfig,
		MaxShareSessions: b.cfg.maxShareSessions(),
		WriteTimeout:     b.cfg.durationMs("share.coordinator.write.timeout.ms"),
		Logger:           b.logger.Named("share-partitions"),
		RemoteRead:       b.shareRemoteRead(),
	})
}

// shareGroupStates are the share groups' metrics of the share partitions led here.
func (b *Broker) shareGroupStates() []metrics.ShareGroupState {
	if b.shares == nil {
		return nil
	}
	samples := b.shares.Samples()
	out := make([]metrics.ShareGroupState, len(samples))
	for i, s := range samples {
		out[i] = metrics.ShareGroupState{Group: s.GroupID, InFlight: s.InFlight, Acquired: s.Acquired,
			Redelivered: s.Redelivered, ArchivedAtDeliveryLimit: s.ArchivedAtDeliveryLimit}
	}
	return out
}

// shareReplicas finds the replicas this broker leads by topic id.
type shareReplicas struct{ b *Broker }

func (s shareReplicas) Leader(topicID [16]byte, partition int32) (shareleader.Replica, int16) {
	t := s.b.Image().TopicByID(metadata.Uuid(topicID))
	if t == nil {
		return nil, kerr.UnknownTopicID.Code
	}
	lp := s.b.partitions.get(t.Name, partition)
	if lp == nil {
		return nil, s.b.noReplicaError(t.Name, partition)
	}
	if lp.State().Role != replication.Leader {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return lp.Partition, 0
}

// dropUnledSharePartitions drops the share state of the partitions this broker no
// longer leads (the reconciler, after each metadata change).
func (b *Broker) dropUnledSharePartitions() {
	if b.shares != nil {
		b.shares.DropNotLed()
	}
}

// shareLeaderHints is what a share fetch or acknowledgement answers for a partition
// led elsewhere (NOT_LEADER_OR_FOLLOWER): its leader and epoch from the image, and
// the leaders' endpoints on the request's listener (Kafka's NodeEndpoints).
type shareLeaderHints struct {
	im        *metadata.Image
	listener  string
	endpoints map[int32]bool
}

// hint returns the partition's leader and leader epoch (-1, -1 when unknown) and
// notes the leader for endpoints.
func (h *shareLeaderHints) hint(topicID [16]byte, partition int32) (int32, int32) {
	t := h.im.TopicByID(metadata.Uuid(topicID))
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return -1, -1
	}
	p := t.Partitions[partition]
	if p.Leader >= 0 {
		h.endpoints[p.Leader] = true
	}
	return p.Leader, p.LeaderEpoch
}

// each calls add with every noted leader's endpoint.
func (h *shareLeaderHints) each(add func(id int32, host string, port int32, rack *string)) {
	for id := range h.endpoints {
		br := h.im.Brokers[id]
		if br == nil {
			continue
		}
		e, ok := endpointFor(br, h.listener)
		if !ok {
			continue
		}
		var rack *string
		if br.Rack != "" {
			r := br.Rack
			rack = &r
		}
		add(id, e.Host, e.Port, rack)
	}
}

// maxShareSessions is group.share.max.share.sessions (2000).
func (c *Config) maxShareSessions() int {
	if v, ok := c.brokerValue("group.share.max.share.sessions"); ok || v != "" {
		if n := config.ParseInt64(v); n > 0 {
			return int(n)
		}
	}
	return shareleader.DefaultMaxShareSessions
}
