package broker

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/segment"
)

// Voter is an initial Raft voter: node id and Raft address.
type Voter struct {
	ID   int32
	Addr string
}

// Config is one node's configuration.
type Config struct {
	NodeID     int32
	DataDir    string // raft/ and logs/ live here
	Listen     string // Kafka listener, host:port (port 0 picks one)
	Advertised string // address put in metadata; default: the bound listener address
	RaftListen string // Raft transport, host:port (port 0 picks one)
	Voters     []Voter
	// Properties are Kafka broker properties (server.properties, environment, --set), by
	// name.
	Properties map[string]string
	// PropertySources says where each property came from (SourceConfigFile,
	// SourceEnvironment, SourceSet); a property missing here counts as --set.
	PropertySources map[string]string
	// StrictConfig refuses to start on a property Petrel does not know or does not
	// implement (--strict-config), instead of warning about it.
	StrictConfig bool
	Logger       hclog.Logger
	// JoinAddrs are Kafka addresses of cluster members. A node whose id is not among
	// Voters asks one of them to add it to Raft as a non-voter.
	JoinAddrs []string

	// MetricsListen is the HTTP listener of /metrics, /healthz and /readyz
	// (--metrics-listen); "" serves none.
	MetricsListen string

	// Test hooks: listeners to use instead of binding Listen and RaftListen, and the
	// dialer for every outgoing connection (Raft and broker-to-broker). Nil means TCP.
	KafkaListener net.Listener
	RaftListener  net.Listener
	// MetricsListener is used instead of binding MetricsListen.
	MetricsListener net.Listener
	Dial            func(ctx context.Context, network, addr string) (net.Conn, error)
}

// ParseVoters parses "id@host:port,id@host:port".
func ParseVoters(s string) ([]Voter, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Voter
	for _, part := range strings.Split(s, ",") {
		idStr, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		id, err := strconv.ParseInt(idStr, 10, 32)
		if !ok || err != nil || id < 0 {
			return nil, fmt.Errorf("%w: voter %q is not id@host:port", config.ErrInvalidBrokerConfig, part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%w: voter %q: %v", config.ErrInvalidBrokerConfig, part, err)
		}
		if slices.ContainsFunc(out, func(v Voter) bool { return v.ID == int32(id) }) {
			return nil, fmt.Errorf("%w: voter id %d listed twice", config.ErrInvalidBrokerConfig, id)
		}
		out = append(out, Voter{int32(id), addr})
	}
	return out, nil
}

// validate checks the flags; checkProperties checks the properties.
func (c *Config) validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("%w: --data-dir is required", config.ErrInvalidBrokerConfig)
	}
	if c.NodeID < 0 {
		return fmt.Errorf("%w: --node-id must be at least 0", config.ErrInvalidBrokerConfig)
	}
	if _, set := c.Properties["listeners"]; c.KafkaListener == nil && !set {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("%w: --listen %q: %v", config.ErrInvalidBrokerConfig, c.Listen, err)
		}
	}
	if c.RaftListener == nil {
		if _, _, err := net.SplitHostPort(c.RaftListen); err != nil {
			return fmt.Errorf("%w: --raft-listen %q: %v", config.ErrInvalidBrokerConfig, c.RaftListen, err)
		}
	}
	if _, err := c.listenerSpecs(); err != nil { // the one listener rule (config/listener_rule.go)
		return err
	}
	return nil
}

// brokerValue returns a broker property's effective value and whether it was set.
func (c *Config) brokerValue(name string) (string, bool) {
	v, from := config.BrokerValue(c.Properties, name)
	return v, from != ""
}

func (c *Config) int64Value(name string) int64 {
	v, _ := c.brokerValue(name)
	return config.ParseInt64(v) // validated at start
}

func (c *Config) boolValue(name string) bool {
	v, _ := c.brokerValue(name)
	return config.ParseBool(v)
}

func (c *Config) durationMs(name string) time.Duration {
	return time.Duration(c.int64Value(name)) * time.Millisecond
}

func (c *Config) raftDir() string { return filepath.Join(c.DataDir, "raft") }
func (c *Config) logsDir() string { return filepath.Join(c.DataDir, "logs") }

func ensureDir(dir string) error { return os.MkdirAll(dir, 0o755) }

// topicConfigs resolves every topic config for a topic with overrides: the override
// (source DYNAMIC_TOPIC_CONFIG), else the broker property (STATIC_BROKER_CONFIG), else
// Kafka's default (DEFAULT_CONFIG).
func (c *Config) topicConfigs(overrides map[string]string) map[string]config.Resolved {
	return config.ResolveTopicConfigs(overrides, config.DynamicBrokerConfigs{}, c.Properties)
}

// segmentConfig turns resolved topic configs into the storage engine's settings.
func segmentConfig(cfgs map[string]config.Resolved) segment.Config {
	n := func(name string) int64 { return config.ParseInt64(cfgs[name].Value) }
	sc := segment.DefaultConfig()
	sc.SegmentBytes = n("segment.bytes")
	sc.SegmentMs = n("segment.ms")
	sc.SegmentIndexBytes = int(n("segment.index.bytes"))
	sc.IndexIntervalBytes = int(n("index.interval.bytes"))
	sc.RetentionMs = n("retention.ms")
	sc.RetentionBytes = n("retention.bytes")
	// Tiered storage (KIP-405, segment/tiered.go).
	sc.RemoteStorageEnable = config.ParseBool(cfgs["remote.storage.enable"].Value)
	sc.RemoteCopyDisable = config.ParseBool(cfgs["remote.log.copy.disable"].Value)
	sc.LocalRetentionMs = n("local.retention.ms")
	sc.LocalRetentionBytes = n("local.retention.bytes")
	// flush.messages=1 is handled by group commit in replication, not per append here.
	if fm := n("flush.messages"); fm > 1 {
		sc.FlushMessages = fm
	}
	sc.FlushMs = n("flush.ms")
	if !strings.Contains(cfgs["cleanup.policy"].Value, "delete") {
		// A compact-only topic is never trimmed by time or size.
		sc.RetentionMs, sc.RetentionBytes, sc.LocalRetentionMs, sc.LocalRetentionBytes = -1, -1, -1, -1
	}
	sc.Compacted = strings.Contains(cfgs["cleanup.policy"].Value, "compact")
	sc.LogAppendTime = cfgs["message.timestamp.type"].Value == "LogAppendTime"
	return sc
}

// cleanerSettings are a topic's log cleaner settings (cleaner.go).
type cleanerSettings struct {
	compact           bool
	minCleanableRatio float64
	minLagMs          int64
	maxLagMs          int64
	deleteRetentionMs int64
}

func cleanerConfig(cfgs map[string]config.Resolved) cleanerSettings {
	ratio, _ := strconv.ParseFloat(strings.TrimSpace(cfgs["min.cleanable.dirty.ratio"].Value), 64)
	return cleanerSettings{
		compact:           strings.Contains(cfgs["cleanup.policy"].Value, "compact"),
		minCleanableRatio: ratio,
		minLagMs:          config.ParseInt64(cfgs["min.compaction.lag.ms"].Value),
		maxLagMs:          config.ParseInt64(cfgs["max.compaction.lag.ms"].Value),
		deleteRetentionMs: config.ParseInt64(cfgs["delete.retention.ms"].Value),
	}
}

func (c *Config) float64Value(name string) float64 {
	v, _ := c.brokerValue(name)
	f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64) // validated at start
	return f
}

// propertySource is where a supplied property came from.
func (c *Config) propertySource(name string) string {
	if s, ok := c.PropertySources[name]; ok {
		return s
	}
	return config.SourceSet
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
