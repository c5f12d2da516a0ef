package broker

// A share group's settings as its readers see them: the group's own share.* configs
// (GROUP config resource, in the metadata image) over the broker's group.share.*
// properties. The group coordinator reads the session timeout and heartbeat interval
// at each heartbeat (group.Config.ShareGroupConfig); the share-partition manager reads
// the rest (shareleader.GroupConfig) when it loads a share partition or starts a fetch.
// A group value outside the broker's current bounds (they may have changed since it
// was set) is brought within them, as Kafka's GroupConfig.evaluate does.

import (
	"strings"
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/group"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/share"
	"github.com/petrel-broker/petrel/shareleader"
)

// shareGroupsConfig is the share groups' configuration from the group.share.*
// properties (checked at start by config.CheckShareGroupProperties).
func shareGroupsConfig(c *Config) group.ShareConfig {
	out := group.DefaultShareConfig()
	out.SessionTimeout = c.durationMs("group.share.session.timeout.ms")
	out.HeartbeatInterval = c.durationMs("group.share.heartbeat.interval.ms")
	out.MaxSize = int(c.int64Value("group.share.max.size"))
	return out
}

// shareGroupValue returns group id's own value of the bounded share config name in im,
// brought within the broker's bounds minName..maxName, or the broker property's value
// when the group has none.
func (b *Broker) shareGroupValue(im *metadata.Image, id, name, minName, maxName string) int64 {
	res := metadata.ConfigResource{Type: metadata.GroupResource, Name: id}
	def, _ := config.GroupDef(name)
	v, ok := im.Config(res, name)
	if !ok {
		return b.cfg.int64Value(def.BrokerSynonym)
	}
	n := config.ParseInt64(v)
	return min(max(n, b.cfg.int64Value(minName)), b.cfg.int64Value(maxName))
}

// shareGroupSessionConfig is group.Config.ShareGroupConfig: group id's
// share.session.timeout.ms and share.heartbeat.interval.ms over the broker's.
func (b *Broker) shareGroupSessionConfig(id string) group.ConsumerGroupConfig {
	im := b.Image()
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	return group.ConsumerGroupConfig{
		SessionTimeout: ms(b.shareGroupValue(im, id, config.ShareSessionTimeoutConfig,
			"group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms")),
		HeartbeatInterval: ms(b.shareGroupValue(im, id, config.ShareHeartbeatIntervalConfig,
			"group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms")),
	}
}

// shareGroupConfig is share group groupID's settings as the share-partition manager
// reads them (shareleader.GroupConfig): share.record.lock.duration.ms,
// share.delivery.count.limit, share.partition.max.record.locks,
// share.auto.offset.reset and share.isolation.level, each the group's own value or
// the broker's default. share.acquire.mode is not a group config in Kafka 4.2 (the
// consumer sends it in each ShareFetch v2): AcquireMode is left batch_optimized.
func (b *Broker) shareGroupConfig(groupID string) shareleader.GroupConfig {
	im := b.Image()
	res := metadata.ConfigResource{Type: metadata.GroupResource, Name: groupID}
	out := shareleader.GroupConfig{
		Partition: share.Config{
			RecordLockDurationMs: b.shareGroupValue(im, groupID, config.ShareRecordLockDurationConfig,
				"group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"),
			DeliveryCountLimit: int16(b.shareGroupValue(im, groupID, config.ShareDeliveryCountLimitConfig,
				"group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit")),
			MaxRecordLocks: b.shareGroupValue(im, groupID, config.SharePartitionMaxRecordLocksConf,
				"group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"),
		},
		AutoOffsetReset: "latest",
		AcquireMode:     share.BatchOptimized,
	}
	if v, ok := im.Config(res, config.ShareAutoOffsetResetConfig); ok {
		out.AutoOffsetReset = strings.ToLower(strings.TrimSpace(v))
	}
	if v, ok := im.Config(res, config.ShareIsolationLevelConfig); ok {
		out.ReadCommitted = v == "read_committed"
	}
	return out
}
