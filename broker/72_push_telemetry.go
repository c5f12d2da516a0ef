package broker

// PushTelemetry (key 72), v0 (KIP-714): a client instance's metrics, OTLP
// MetricsData, compressed with one of the accepted codecs or none, decoded and kept
// as /metrics series with the client's labels (telemetry.Manager.PushMetrics has
// Kafka's checks and their order). A terminating push is the instance's last.
// Authorizes nothing, as Kafka.

import (
	"context"
	"time"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/telemetry"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.PushTelemetry, 0, 0, (*Broker).handlePushTelemetry, apiOpts{
		authorize: authorizeNothing,
	})
	releasesRequestFrame(kmsg.PushTelemetry) // the metrics are decoded before it returns
}

func (b *Broker) handlePushTelemetry(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.PushTelemetryRequest)
	resp := r.ResponseKind().(*kmsg.PushTelemetryResponse)
	t := b.clientTelemetry
	t.sync(b.Image())
	resp.ErrorCode = t.manager.PushMetrics(telemetry.Push{
		ClientInstanceID: r.ClientInstanceID,
		SubscriptionID:   r.SubscriptionID,
		Terminating:      r.Terminating,
		CompressionType:  r.CompressionType,
		Metrics:          r.Metrics,
		Decompress:       t.decompress(r.CompressionType, r.Metrics),
	}, clientInfo(req), time.Now())
	return rpc.Respond(resp)
}
