package broker

// Client telemetry (KIP-714) wiring: the telemetry.Manager that answers
// GetTelemetrySubscriptions (71) and PushTelemetry (72), fed with the CLIENT_METRICS
// subscriptions of the metadata image, its series served on /metrics; and the
// CLIENT_METRICS resource's DescribeConfigs answer.

import (
	"crypto/rand"
	"errors"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/petrel-broker/petrel/compress"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/petrel-broker/petrel/telemetry"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clientTelemetry is the broker's client telemetry. Safe for concurrent use; mu is a
// leaf (taken before the manager's, never around a call out).
type clientTelemetry struct {
	manager  *telemetry.Manager
	readers  *compress.Readers // bounded by telemetry.max.bytes
	maxBytes int32
	registry *prometheus.Registry

	mu   sync.Mutex
	seen map[string]map[string]string // guarded by mu: the subscriptions' configs last applied
}

func newClientTelemetry(cfg *Config) *clientTelemetry {
	maxBytes := int32(min(cfg.int64Value(config.TelemetryMaxBytesProperty), 1<<31-1))
	t := &clientTelemetry{
		manager: telemetry.NewManager(telemetry.Config{
			MaxBytes:  maxBytes,
			MaxSeries: int(cfg.int64Value(config.ClientMetricsMaxSeriesProperty)),
			NewInstanceID: func() (id [16]byte) {
				_, _ = rand.Read(id[:])
				return id
			},
		}),
		readers:  compress.NewReaders(int64(maxBytes)),
		maxBytes: maxBytes,
		registry: prometheus.NewRegistry(),
	}
	t.registry.MustRegister(t.manager)
	return t
}

// sync gives the manager the image's subscriptions when they changed since the last
// call (an instance is resolved again only then, as Kafka's update version makes it).
func (t *clientTelemetry) sync(im *metadata.Image) {
	now := map[string]map[string]string{}
	for res, cfgs := range im.Configs {
		if res.Type == metadata.ClientMetricsResource && len(cfgs) > 0 {
			now[res.Name] = cfgs
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen != nil && maps.EqualFunc(t.seen, now, func(a, b map[string]string) bool { return maps.Equal(a, b) }) {
		return
	}
	t.seen = now
	subs := make([]telemetry.Subscription, 0, len(now))
	for _, name := range slices.Sorted(maps.Keys(now)) {
		s, err := telemetry.ParseSubscription(name, now[name])
		if err != nil {
			continue // refused at alter time; a stored one Petrel cannot parse matches no one
		}
		subs = append(subs, s)
	}
	t.manager.SetSubscriptions(subs)
}

// clientInfo is what the request tells of its client.
func clientInfo(req *rpc.Request) telemetry.ClientInfo {
	var c telemetry.ClientInfo
	if req.ClientID != nil {
		c.ClientID = *req.ClientID
	}
	c.Principal, _ = requestPrincipal(req)
	if req.Conn != nil {
		c.SoftwareName, c.SoftwareVersion = req.Conn.ClientSoftwareName, req.Conn.ClientSoftwareVersion
		if req.Conn.RemoteAddr != nil {
			c.SourceAddress, c.SourcePort, _ = net.SplitHostPort(req.Conn.RemoteAddr.String())
		}
	}
	return c
}

// decompress returns a push's metrics decompressed within telemetry.max.bytes.
func (t *clientTelemetry) decompress(codec int8, b []byte) func() ([]byte, error) {
	return func() ([]byte, error) {
		out, err := t.readers.Decompress(codec, b)
		if errors.Is(err, compress.ErrTooLarge) {
			return nil, telemetry.ErrTooLarge
		}
		return out, err
	}
}

// describeClientMetricsConfigs is DescribeConfigs of a subscription: its three configs,
// its own values as CLIENT_METRICS_CONFIG, the others Kafka's defaults. The subscription
// need not exist; an empty name is INVALID_REQUEST.
func describeClientMetricsConfigs(r *kmsg.DescribeConfigsRequest, im *metadata.Image, name string) ([]kmsg.DescribeConfigsResponseResourceConfig, int16, *string) {
	if name == "" {
		return nil, kerr.InvalidRequest.Code, errorMessage(errors.New("Subscription name can't be empty"))
	}
	own := im.ResourceConfigs(metadata.ConfigResource{Type: metadata.ClientMetricsResource, Name: name})
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, rc := range config.ResolveClientMetricsConfigs(own) {
		c := newConfigEntry(r, rc.Def, rc.Value, rc.Source)
		if r.IncludeSynonyms && rc.Source == config.ClientMetricsConfigSource {
			c.ConfigSynonyms = append(c.ConfigSynonyms, synonym(rc.Def.Name, rc.Value, rc.Source))
		}
		out = append(out, c)
	}
	return out, 0, nil
}
