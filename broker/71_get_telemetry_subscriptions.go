package broker

// GetTelemetrySubscriptions (key 71), v0 (KIP-714): a client instance id (assigned when
// the client sends none), the subscription id, the metrics and push interval of the
// CLIENT_METRICS subscriptions the client matches, the codecs it may compress its
// pushes with, telemetry.max.bytes and delta temporality; THROTTLING_QUOTA_EXCEEDED
// when asked again within the push interval. Authorizes nothing, as Kafka.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/telemetry"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.GetTelemetrySubscriptions, 0, 0, (*Broker).handleGetTelemetrySubscriptions, apiOpts{
		authorize: authorizeNothing,
	})
}

func (b *Broker) handleGetTelemetrySubscriptions(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := r.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	t := b.clientTelemetry
	t.sync(b.Image())
	got := t.manager.GetSubscriptions(r.ClientInstanceID, clientInfo(req), time.Now())
	resp.ErrorCode, resp.ClientInstanceID = got.ErrorCode, got.ClientInstanceID
	if got.ErrorCode != 0 {
		return rpc.Respond(resp)
	}
	resp.SubscriptionID = got.SubscriptionID
	resp.AcceptedCompressionTypes = telemetry.AcceptedCompressionTypes
	resp.PushIntervalMillis = got.PushIntervalMs
	resp.TelemetryMaxBytes = t.maxBytes
	resp.DeltaTemporality = true
	resp.RequestedMetrics = got.RequestedMetrics
	return rpc.Respond(resp)
}
