package broker

// Start-up readiness, as in Apache Kafka: a broker processes no client request until it
// has caught up with the metadata log and is unfenced. Here that means: this process's
// registration is in its own image and unfenced (the controller unfences a broker only
// once its heartbeat reports a metadata offset at or past its registration, so the image
// holds everything committed before the broker registered; on a one-voter cluster the
// node must first be the Raft leader and have applied its log, or it could not register
// itself), and the reconciler has opened, recovered and given a role to every replica
// that image assigns here.
//
// Until then the Kafka listener accepts connections and answers ApiVersions, but every
// other client request waits on its connection's reader goroutine, so the requests of a
// connection keep their order. Requests brokers send each other pass at once: the
// internal APIs (registration and heartbeats must reach a controller that is not ready
// itself, or a cluster could never start) and follower fetches and OffsetForLeaderEpoch
// from replicas (they find no open replica and are told NOT_LEADER_OR_FOLLOWER).
//
// A waiting request is bounded by its own timeout: timeout_ms where the request has one
// (Produce, CreateTopics, ...), max_wait_ms for Fetch, and clientRequestTimeout (Kafka's
// request.timeout.ms default) for the rest. When it passes, the partition APIs are
// answered, every partition NOT_LEADER_OR_FOLLOWER unless its replica is already open;
// any other request closes its connection, as a broker that does not answer yet would be
// left by the client. Never is a request answered from a stale or empty image.

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientRequestTimeout bounds the readiness wait of a request without a timeout of its
// own: Kafka's client request.timeout.ms default.
const clientRequestTimeout = 30 * time.Second

// Ready reports whether this broker has caught up with the metadata log, is registered
// and unfenced, and has opened its replicas: it processes client requests.
func (b *Broker) Ready() bool { return b.ready.Load() }

// readyTimes are the two parts of start-up the "broker ready" line reports: catching
// up with the metadata log (until unfenced) and opening the replicas (the first
// reconciliation). Written once, before readyCh is closed.
type readyTimes struct{ catchUp, recovery time.Duration }

// markReady records readiness once and logs how long start-up took, and how many of the
// replicas opened were opened from the clean shutdown's descriptions (described).
func (b *Broker) markReady(caughtUp, opened time.Time, offset uint64, replicas int, described int64) {
	if b.ready.Swap(true) {
		return
	}
	b.readyTimes = readyTimes{catchUp: caughtUp.Sub(b.startedAt), recovery: opened.Sub(caughtUp)}
	close(b.readyCh)
	b.logger.Info("broker ready: serving client requests",
		"metadata_offset", offset,
		"metadata_catch_up", caughtUp.Sub(b.startedAt).Round(time.Millisecond).String(),
		"replica_recovery", opened.Sub(caughtUp).Round(time.Millisecond).String(),
		"replicas", replicas,
		"replicas_from_shutdown_state", described,
		"total", opened.Sub(b.startedAt).Round(time.Millisecond).String())
}

// readinessBound is how long a request may wait for readiness: its own timeout.
func readinessBound(req kmsg.Request) time.Duration {
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond
	case kmsg.TimeoutRequest:
		if ms := r.Timeout(); ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return clientRequestTimeout
}

// untilReady wraps a client API's handler with the readiness wait.
func (b *Broker) untilReady(key kmsg.Key, h rpc.Handler) rpc.Handler {
	return func(ctx context.Context, req *rpc.Request) rpc.Result {
		if err := b.metadataStoreFailure(); err != nil && !fromBroker(req) {
			// The image no longer follows the metadata log (metadata_store.go): the
			// client goes to another broker, as from one that does not answer.
			return rpc.CloseConnection(fmt.Errorf("broker %d serves no client request: %w", b.cfg.NodeID, err))
		}
		if b.ready.Load() || fromBroker(req) {
			return h(ctx, req)
		}
		timer := time.NewTimer(readinessBound(req.Body))
		defer timer.Stop()
		select {
		case <-b.readyCh:
			return h(ctx, req)
		case <-timer.C:
			if a := apiFor(int16(key)); a != nil && a.partitionScoped { // answered per partition: NOT_LEADER_OR_FOLLOWER
				return h(ctx, req)
			}
			return rpc.CloseConnection(fmt.Errorf("%s waited for start-up readiness past its timeout: broker %d has not caught up with the metadata log",
				rpc.NameForKey(int16(key)), b.cfg.NodeID))
		case <-ctx.Done():
			return rpc.CloseConnection(ctx.Err())
		case <-b.draining:
			return rpc.CloseConnection(fmt.Errorf("broker %d is stopping before it was ready", b.cfg.NodeID))
		}
	}
}

// noReplicaError is the one answer for a request naming a partition this broker has no
// open replica of (Kafka's rule, used by every handler): UNKNOWN_TOPIC_OR_PARTITION only
// when a caught-up image has no such topic or partition; NOT_LEADER_OR_FOLLOWER when the
// partition exists but is not hosted here, its replica is still opening, or the image is
// not caught up yet (it cannot tell that a topic is absent). A replica that is stopping
// is still found and answers replication.ErrPartitionStopped: NOT_LEADER_OR_FOLLOWER too.
func (b *Broker) noReplicaError(topic string, partition int32) int16 {
	if !b.ready.Load() {
		return kerr.NotLeaderForPartition.Code
	}
	t := b.Image().Topic(topic)
	if t == nil || partition < 0 || int(partition) >= len(t.Partitions) {
		return kerr.UnknownTopicOrPartition.Code
	}
	if _, offline := b.offline.get(topic, partition); offline {
		return kerr.KafkaStorageError.Code // offline_replicas.go
	}
	return kerr.NotLeaderForPartition.Code
}
