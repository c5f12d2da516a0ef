package coordinator

// The KIP-848 consumer groups on the group coordinator: ConsumerGroupHeartbeat (key 68)
// submitted to the group's __consumer_offsets partition, and the one timer per loaded
// partition that expires members at the shard's next session or rebalance deadline
// (Kafka's GroupMetadataManager schedules one timer per member; the shard keeps the
// deadlines and this timer follows the earliest).

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/group"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerExpireTimer is the runtime timer key of the consumer groups' session and
// rebalance timeouts: at most one per partition, armed no later than the partition's
// earliest member deadline. The load and every expiry re-arm it exactly
// (Shard.NextConsumerDeadline, a scan of every member); a heartbeat only brings it
// forward, to its own group's earliest deadline (ConsumerGroup.NextDeadline), as that
// is the only group it changed. A timer left early by a heartbeat that moved a
// deadline later finds nothing to expire and re-arms exactly, so a partition with M
// members pays one full scan per session rather than one per heartbeat. Every shard
// call that may set a consumer group's deadlines (ConsumerGroupHeartbeat, and the
// classic calls of a consumer group's classic members) asks for it the same way, with
// a group.Timer keyed group.ConsumerDeadlineTimer, which convert arms only if it is
// earlier than the armed one.
const consumerExpireTimer = group.ConsumerDeadlineTimer

// ConsumerGroupHeartbeat answers r (any version) from the group's shard, once the
// records it causes are committed. client is who sent it (the request header's client
// id and the connection's host), stored for display only. A group whose partition is
// not served here gets NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, which the
// client retries after finding the coordinator again. describable, when not nil, says
// which topics the sender may DESCRIBE: a regular expression the heartbeat resolves
// keeps only those (group.ConsumerTopicsWithDescriber); it runs on the shard's
// goroutine and must not block.
func (gc *GroupCoordinator) ConsumerGroupHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest, client group.Client, describable func(topic string) bool) <-chan kmsg.Response {
	return gc.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		topics := group.ConsumerTopicsWithDescriber(gc.cfg.ConsumerTopics(), describable)
		// The shard asks for the expiry timer at the group's earliest deadline
		// (group.ConsumerDeadlineTimer); convert arms it only if it is earlier.
		return s.ConsumerGroupHeartbeat(now, client, r, topics, send)
	}, func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	})
}

// bringConsumerTimerForward arms the expiry timer at at if no timer is armed earlier
// (convert's handling of the heartbeat's consumerExpireTimer).
func (g *groupShard) bringConsumerTimerForward(at time.Time) (Timer, bool) {
	if at.IsZero() || (!g.consumerArmed.IsZero() && !at.Before(g.consumerArmed)) {
		return Timer{}, false
	}
	g.consumerArmed = at
	return Timer{Key: consumerExpireTimer, At: at, Fire: expireConsumers}, true
}

// rearmConsumerTimer arms the expiry timer at the shard's next deadline, or cancels it
// when no member has a timer running.
func (g *groupShard) rearmConsumerTimer() Timer {
	at, ok := g.s.NextConsumerDeadline()
	if !ok {
		g.consumerArmed = time.Time{}
		return Timer{Key: consumerExpireTimer}
	}
	g.consumerArmed = at
	return Timer{Key: consumerExpireTimer, At: at, Fire: expireConsumers}
}

// expireConsumers is the expiry timer's firing: remove the members whose deadline
// passed, then re-arm at the next deadline.
func expireConsumers(now time.Time, s Shard) Result {
	gs := s.(*groupShard)
	res := gs.convert(gs.s.ExpireConsumerGroups(now, gs.gc.cfg.ConsumerTopics()))
	res.Timers = append(res.Timers, gs.rearmConsumerTimer())
	return res
}

// RandomKafkaUUID is a random id as Kafka's Uuid.randomUuid().toString() prints it
// (22 characters of URL-safe base64, never starting with "-"): the member id Kafka
// gives a ConsumerGroupHeartbeat v0 member that joins without one.
func RandomKafkaUUID() string {
	for {
		var u [16]byte
		_, _ = rand.Read(u[:])
		if s := base64.RawURLEncoding.EncodeToString(u[:]); !strings.HasPrefix(s, "-") && u != [16]byte{} {
			return s
		}
	}
}
