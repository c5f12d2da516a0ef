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
// rebalance timeouts: at most one per partition, set at Shard.NextConsumerDeadline
// after the load and after every heartbeat and expiry.
const consumerExpireTimer = "petrel/consumer-expire"

// ConsumerGroupHeartbeat answers r (any version) from the group's shard, once the
// records it causes are committed. client is who sent it (the request header's client
// id and the connection's host), stored for display only. A group whose partition is
// not served here gets NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, which the
// client retries after finding the coordinator again.
func (gc *GroupCoordinator) ConsumerGroupHeartbeat(r *kmsg.ConsumerGroupHeartbeatRequest, client group.Client) <-chan kmsg.Response {
	return gc.Respond(r.Group, func(now time.Time, s *group.Shard, send func(kmsg.Response)) group.Effects {
		eff := s.ConsumerGroupHeartbeat(now, client, r, gc.consumerTopics(), send)
		eff.Timers = append(eff.Timers, consumerTimer(s))
		return eff
	}, func(code int16) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	})
}

// consumerTimer is the shard's consumer expiry timer at its next deadline, or the
// cancellation of a pending one (zero At) when no member has a timer running.
func consumerTimer(s *group.Shard) group.Timer {
	at, ok := s.NextConsumerDeadline()
	if !ok {
		return group.Timer{Key: consumerExpireTimer}
	}
	return group.Timer{Key: consumerExpireTimer, At: at}
}

// expireConsumers is the consumer expiry timer's firing: remove the members whose
// deadline passed, then follow the next deadline.
func expireConsumers(now time.Time, s Shard) Result {
	gs := s.(*groupShard)
	eff := gs.s.ExpireConsumerGroups(now, gs.gc.consumerTopics())
	eff.Timers = append(eff.Timers, consumerTimer(gs.s))
	return gs.convert(eff)
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
