package broker

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219): producer_byte_rate,
// consumer_byte_rate and request_percentage per user and/or client id, stored in the
// metadata log (ClientQuotaRecord) and resolved in Kafka's order of precedence
// (auth.ResolveQuota). withQuotas wraps every client API: it records the request's
// produced bytes, the consumer fetch's response bytes and the handler's time against
// the matching quotas, and a rate over its quota answers with throttle_time_ms and
// mutes the connection for that long (rpc.Result.OnResponse). Requests from brokers
// are never throttled; acks=0 produces are counted but, having no response, not muted.

import (
	"context"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientQuotas is the broker's quota state; the zero value reads the configuration on
// first use.
type clientQuotas struct {
	once    sync.Once
	manager *auth.QuotaManager
}

func (b *Broker) quotaManager() *auth.QuotaManager {
	q := &b.quotas
	q.once.Do(func() {
		q.manager = auth.NewQuotaManager(int(b.cfg.int64Value("quota.window.num")), b.cfg.int64Value("quota.window.size.seconds")*1000)
	})
	return q.manager
}

// imageQuotaLookup looks quota values up in an image.
func imageQuotaLookup(im *metadata.Image) auth.QuotaLookup {
	return func(e auth.QuotaEntity, key string) (float64, bool) {
		q := im.ClientQuotas[metadata.QuotaEntityKey(quotaEntityData(e))]
		if q == nil {
			return 0, false
		}
		v, ok := q.Values[key]
		return v, ok
	}
}

func quotaEntityData(e auth.QuotaEntity) []metadata.ClientQuotaEntityData {
	var out []metadata.ClientQuotaEntityData
	if e.HasUser {
		out = append(out, metadata.ClientQuotaEntityData{EntityType: auth.EntityUser, EntityName: e.User})
	}
	if e.HasClientID {
		out = append(out, metadata.ClientQuotaEntityData{EntityType: auth.EntityClientID, EntityName: e.ClientID})
	}
	return out
}

// withQuotas wraps a client API's handler with quota accounting.
func (b *Broker) withQuotas(key kmsg.Key, h rpc.Handler) rpc.Handler {
	return func(ctx context.Context, req *rpc.Request) rpc.Result {
		im := b.Image()
		if len(im.ClientQuotas) == 0 || b.quotaExempt(req) {
			return h(ctx, req)
		}
		principal, _ := requestPrincipal(req)
		clientID := ""
		if req.ClientID != nil {
			clientID = *req.ClientID
		}
		quotas := b.quotaManager().For(imageQuotaLookup(im), principal, clientID)
		record := func(quotaKey string, value float64) time.Duration { return quotas.Record(quotaKey, value, time.Now()) }
		var throttle time.Duration
		if p, ok := req.Body.(*kmsg.ProduceRequest); ok {
			n := 0
			for _, t := range p.Topics {
				for _, part := range t.Partitions {
					n += len(part.Records)
				}
			}
			throttle = record(auth.ProducerByteRate, float64(n))
		}
		start := time.Now()
		res := h(ctx, req)
		throttle = max(throttle, record(auth.RequestPercentage, auth.RequestTimePercentage(time.Since(start))))
		if f, ok := req.Body.(*kmsg.FetchRequest); ok && fetchReplica(f) < 0 {
			return res.OnResponse(func(resp kmsg.Response) time.Duration {
				return max(throttle, record(auth.ConsumerByteRate, float64(fetchResponseBytes(resp))))
			})
		}
		if throttle <= 0 {
			return res
		}
		return res.OnResponse(func(kmsg.Response) time.Duration { return throttle })
	}
}

// quotaExempt reports requests no client quota applies to, as in Kafka: a follower's
// fetch (a replica id; it needs ClusterAction when the authorizer is on) and the
// requests of an authenticated broker principal (clusterPrincipal). A client id that
// names a broker exempts nothing.
func (b *Broker) quotaExempt(req *rpc.Request) bool {
	if f, ok := req.Body.(*kmsg.FetchRequest); ok && fetchReplica(f) >= 0 {
		return true
	}
	return b.clusterPrincipal(req)
}

// fetchResponseBytes is the record bytes a Fetch response carries, inline or held for
// sendfile (replication.FetchAnswer).
func fetchResponseBytes(resp kmsg.Response) int64 {
	var n int64
	if a, ok := resp.(*replication.FetchAnswer); ok {
		n = a.HeldBytes()
	}
	for _, t := range replication.FetchResponseOf(resp).Topics {
		for _, p := range t.Partitions {
			n += int64(len(p.RecordBatches))
		}
	}
	return n
}

// fetchReplica is a fetch's replica id (-1 for consumers).
func fetchReplica(f *kmsg.FetchRequest) int32 {
	if f.Version >= 15 {
		return f.ReplicaState.ID
	}
	return f.ReplicaID
}
