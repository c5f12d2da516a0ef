package group

// A consumer group's own configs (KIP-848's group configs, the GROUP config resource:
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms) over the shard's
// ConsumerConfig. The shard reads them at each heartbeat of the group, so that a
// change applies to a member from its next heartbeat: the interval in the response and
// the session deadline the heartbeat sets. They are read too when the group is created
// or replayed, which starts the session timers after a load.

import "time"

// ConsumerGroupConfig is one consumer group's own configs; a zero field takes the
// shard's Config.Consumer value.
type ConsumerGroupConfig struct {
	// SessionTimeout is the group's consumer.session.timeout.ms.
	SessionTimeout time.Duration
	// HeartbeatInterval is the group's consumer.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
}

// consumerConfig returns the effective ConsumerConfig of group id: Config.Consumer
// with the group's own configs (Config.ConsumerGroupConfig) over it.
func (s *Shard) consumerConfig(id string) ConsumerConfig {
	cfg := s.cfg.Consumer
	if s.cfg.ConsumerGroupConfig == nil {
		return cfg
	}
	s.cfg.ConsumerGroupConfig(id).override(&cfg.SessionTimeout, &cfg.HeartbeatInterval)
	return cfg
}

// override sets *session and *interval to c's non-zero values.
func (c ConsumerGroupConfig) override(session, interval *time.Duration) {
	if c.SessionTimeout > 0 {
		*session = c.SessionTimeout
	}
	if c.HeartbeatInterval > 0 {
		*interval = c.HeartbeatInterval
	}
}
