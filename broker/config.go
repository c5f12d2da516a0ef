package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/magiconair/properties"
	"github.com/petrel-broker/petrel/segment"
)

// ErrInvalidBrokerConfig reports a bad flag or property.
var ErrInvalidBrokerConfig = errors.New("broker: invalid configuration")

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
	// Properties are Kafka broker properties (server.properties plus --set), by name.
	Properties map[string]string
	Logger     hclog.Logger
	// JoinAddrs are Kafka addresses of cluster members. A node whose id is not among
	// Voters asks one of them to add it to Raft as a non-voter.
	JoinAddrs []string

	// Test hooks: listeners to use instead of binding Listen and RaftListen, and the
	// dialer for every outgoing connection (Raft and broker-to-broker). Nil means TCP.
	KafkaListener net.Listener
	RaftListener  net.Listener
	Dial          func(ctx context.Context, network, addr string) (net.Conn, error)
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
			return nil, fmt.Errorf("%w: voter %q is not id@host:port", ErrInvalidBrokerConfig, part)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("%w: voter %q: %v", ErrInvalidBrokerConfig, part, err)
		}
		if slices.ContainsFunc(out, func(v Voter) bool { return v.ID == int32(id) }) {
			return nil, fmt.Errorf("%w: voter id %d listed twice", ErrInvalidBrokerConfig, id)
		}
		out = append(out, Voter{int32(id), addr})
	}
	return out, nil
}

// LoadProperties reads a server.properties file (Java properties syntax).
func LoadProperties(path string) (map[string]string, error) {
	p, err := properties.LoadFile(path, properties.UTF8)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBrokerConfig, err)
	}
	return p.Map(), nil
}

// ParseSet parses repeated --set key=value flags into props.
func ParseSet(props map[string]string, sets []string) error {
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%w: --set %q is not key=value", ErrInvalidBrokerConfig, s)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

// validate checks flags and every known property's type.
func (c *Config) validate() error {
	if c.DataDir == "" {
		return fmt.Errorf("%w: --data-dir is required", ErrInvalidBrokerConfig)
	}
	if c.NodeID < 0 {
		return fmt.Errorf("%w: --node-id must be at least 0", ErrInvalidBrokerConfig)
	}
	if c.KafkaListener == nil {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			return fmt.Errorf("%w: --listen %q: %v", ErrInvalidBrokerConfig, c.Listen, err)
		}
	}
	if c.RaftListener == nil {
		if _, _, err := net.SplitHostPort(c.RaftListen); err != nil {
			return fmt.Errorf("%w: --raft-listen %q: %v", ErrInvalidBrokerConfig, c.RaftListen, err)
		}
	}
	for name, value := range c.Properties {
		def, ok := brokerConfigByName[name]
		if !ok {
			continue // unknown properties are ignored, as Kafka only warns about them
		}
		if err := checkConfigValue(def, value); err != nil {
			return err
		}
	}
	return nil
}

// checkConfigValue checks value against def's type.
func checkConfigValue(def configDef, value string) error {
	var err error
	switch def.Type {
	case TypeBoolean:
		_, err = strconv.ParseBool(value)
	case TypeInt:
		_, err = strconv.ParseInt(value, 10, 32)
	case TypeLong:
		_, err = strconv.ParseInt(value, 10, 64)
	}
	if err != nil {
		return fmt.Errorf("%w: %s=%q is not a valid %s", ErrInvalidBrokerConfig, def.Name, value, typeName(def.Type))
	}
	if def.Name == "cleanup.policy" || def.Name == "log.cleanup.policy" {
		if value != "delete" {
			return fmt.Errorf("%w: %s=%q: only delete is supported", ErrInvalidBrokerConfig, def.Name, value)
		}
	}
	if def.Name == "message.timestamp.type" || def.Name == "log.message.timestamp.type" {
		if value != "CreateTime" {
			return fmt.Errorf("%w: %s=%q: only CreateTime is supported", ErrInvalidBrokerConfig, def.Name, value)
		}
	}
	return nil
}

func typeName(t ConfigType) string {
	return map[ConfigType]string{TypeBoolean: "boolean", TypeString: "string", TypeInt: "int", TypeLong: "long", TypeList: "list"}[t]
}

// brokerValue returns a broker property's effective value and whether it was set.
func (c *Config) brokerValue(name string) (string, bool) {
	if v, ok := c.Properties[name]; ok {
		return v, true
	}
	// Kafka's hour and minute fallbacks for retention and roll.
	switch name {
	case "log.retention.ms":
		if v, ok := c.Properties["log.retention.minutes"]; ok {
			return scaleMs(v, time.Minute), true
		}
		if v, ok := c.Properties["log.retention.hours"]; ok {
			return scaleMs(v, time.Hour), true
		}
	case "log.roll.ms":
		if v, ok := c.Properties["log.roll.hours"]; ok {
			return scaleMs(v, time.Hour), true
		}
	}
	return brokerConfigByName[name].Default, false
}

func scaleMs(v string, unit time.Duration) string {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return v
	}
	if n < 0 {
		return "-1"
	}
	return strconv.FormatInt(n*int64(unit/time.Millisecond), 10)
}

func (c *Config) int64Value(name string) int64 {
	v, _ := c.brokerValue(name)
	n, _ := strconv.ParseInt(v, 10, 64) // validated at start
	return n
}

func (c *Config) boolValue(name string) bool {
	v, _ := c.brokerValue(name)
	b, _ := strconv.ParseBool(v)
	return b
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
func (c *Config) topicConfigs(overrides map[string]string) map[string]resolvedConfig {
	out := make(map[string]resolvedConfig, len(topicConfigDefs))
	for _, def := range topicConfigDefs {
		if v, ok := overrides[def.Name]; ok {
			out[def.Name] = resolvedConfig{def, v, sourceDynamicTopic}
			continue
		}
		v, set := c.brokerValue(def.BrokerSynonym)
		src := sourceDefault
		if set {
			src = sourceStaticBroker
		}
		out[def.Name] = resolvedConfig{def, v, src}
	}
	return out
}

// Kafka's config sources (DescribeConfigs v1+).
const (
	sourceDynamicTopic int8 = 1
	sourceStaticBroker int8 = 4
	sourceDefault      int8 = 5
)

type resolvedConfig struct {
	def    configDef
	value  string
	source int8
}

// segmentConfig turns resolved topic configs into the storage engine's settings.
func segmentConfig(cfgs map[string]resolvedConfig) segment.Config {
	n := func(name string) int64 {
		v, _ := strconv.ParseInt(cfgs[name].value, 10, 64)
		return v
	}
	sc := segment.DefaultConfig()
	sc.SegmentBytes = n("segment.bytes")
	sc.SegmentMs = n("segment.ms")
	sc.SegmentIndexBytes = int(n("segment.index.bytes"))
	sc.IndexIntervalBytes = int(n("index.interval.bytes"))
	sc.RetentionMs = n("retention.ms")
	sc.RetentionBytes = n("retention.bytes")
	// flush.messages=1 is handled by group commit in replication, not per append here.
	if fm := n("flush.messages"); fm > 1 {
		sc.FlushMessages = fm
	}
	sc.FlushMs = n("flush.ms")
	if !strings.Contains(cfgs["cleanup.policy"].value, "delete") {
		// A compacted topic (the internal ones) is never trimmed by time or size.
		sc.RetentionMs, sc.RetentionBytes = -1, -1
	}
	return sc
}
