package broker

// The one listener rule (config/listener_rule.go) at the broker: a Kafka KRaft properties
// file's controller listener becomes the Raft listener and is never a client port.

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/petrel-broker/petrel/config"
)

// kraftProperties is Kafka's config/kraft/server.properties for a combined node, as an
// operator would bring it (ports 0 so that the test binds free ones).
const kraftProperties = `process.roles=broker,controller
node.id=0
controller.quorum.voters=0@127.0.0.1:0
listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0
inter.broker.listener.name=PLAINTEXT
advertised.listeners=CONTROLLER://127.0.0.1:0
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
num.partitions=1
`

// kraftConfig reads text as a --config file and applies the given listener flags.
func kraftConfig(t *testing.T, text string, flags config.ListenerFlags) (Config, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	props, sources, err := config.GatherProperties(file, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{NodeID: 0, DataDir: t.TempDir(), Properties: props, PropertySources: sources,
		Logger: hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0 "), Level: hclog.Warn})}
	return cfg, cfg.ApplyListenerFlags(flags)
}

// A KRaft file's CONTROLLER listener used to become a second client listener. Now it is
// the Raft listener: Raft binds its address, no Kafka listener serves it, and neither
// the registration nor Metadata advertises it.
func TestListenerRule_KRaftControllerListenerIsTheRaftListener(t *testing.T) {
	cfg, err := kraftConfig(t, kraftProperties, config.ListenerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RaftListen != "127.0.0.1:0" {
		t.Fatalf("RaftListen %q, want the CONTROLLER listener's 127.0.0.1:0", cfg.RaftListen)
	}
	b := startReadyBroker(t, cfg)
	ctx := testContext(t)
	if a := b.ListenerAddr("CONTROLLER"); a != nil {
		t.Errorf("CONTROLLER is served as a Kafka listener on %s", a)
	}
	if host, port, _ := net.SplitHostPort(b.RaftAddr()); host != "127.0.0.1" || port == "0" {
		t.Errorf("Raft is on %s", b.RaftAddr())
	}
	if v := b.listenersValue(true); strings.Contains(v, "CONTROLLER") || !strings.HasPrefix(v, "PLAINTEXT://127.0.0.1:") {
		t.Errorf("advertised listeners %q", v)
	}
	if br := b.Image().Brokers[0]; br == nil || len(br.Listeners) != 1 || br.Listeners[0].Name != "PLAINTEXT" {
		t.Errorf("registered endpoints %+v", br)
	}
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	if len(meta.Brokers) != 1 || net.JoinHostPort(meta.Brokers[0].Host, strconv.Itoa(int(meta.Brokers[0].Port))) != b.Addr().String() {
		t.Errorf("Metadata brokers %+v, want only %s", meta.Brokers, b.Addr())
	}
}

// The controller listener's refusals: a different --raft-listen, a protocol the Raft
// transport's security does not follow, no client listener left.
func TestListenerRule_ControllerListenerRefusals(t *testing.T) {
	if _, err := kraftConfig(t, kraftProperties, config.ListenerFlags{RaftListen: "127.0.0.1:9093"}); err == nil ||
		!strings.Contains(err.Error(), "--raft-listen 127.0.0.1:9093 conflicts with listener CONTROLLER://127.0.0.1:0") {
		t.Errorf("a different --raft-listen: %v", err)
	}
	if _, err := kraftConfig(t, kraftProperties, config.ListenerFlags{RaftListen: "127.0.0.1:0"}); err != nil {
		t.Errorf("the same --raft-listen: %v", err)
	}
	ssl := strings.Replace(kraftProperties, "CONTROLLER:PLAINTEXT", "CONTROLLER:SSL", 1)
	cfg, err := kraftConfig(t, ssl, config.ListenerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := CheckConfig(cfg); err == nil || !strings.Contains(err.Error(), "set petrel.raft.security.protocol=SSL") {
		t.Errorf("an SSL controller listener without petrel.raft.security.protocol: %v", err)
	}
	only := strings.Replace(kraftProperties, "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "listeners=CONTROLLER://127.0.0.1:0", 1)
	cfg, err = kraftConfig(t, only, config.ListenerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := CheckConfig(cfg); !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), "at least one broker listener") {
		t.Errorf("only a controller listener: %v", err)
	}
}

// Kafka's refusals, in Kafka's words, from Start itself (not only the command line).
func TestListenerRule_KafkaRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen string
		props  map[string]string
		want   string
	}{
		{"0.0.0.0 advertised from --listen", "0.0.0.0:0", nil, "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."},
		{"0.0.0.0 advertised", "127.0.0.1:0", map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"},
		{"unmapped name", "", map[string]string{"listeners": "EXTERNAL://127.0.0.1:0", "inter.broker.listener.name": "EXTERNAL"}, "No security protocol defined for listener EXTERNAL"},
		{"advertised name not a listener", "127.0.0.1:0", map[string]string{"advertised.listeners": "SSL://127.0.0.1:9093"},
			"advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found SSL. The valid options based on the current configuration are PLAINTEXT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Start(Config{NodeID: 0, DataDir: t.TempDir(), Listen: tc.listen, RaftListen: "127.0.0.1:0", Properties: tc.props})
			if err == nil {
				b.Shutdown(context.Background())
				t.Fatal("started")
			}
			if !errors.Is(err, config.ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
		})
	}
}

// Kafka's default listeners=PLAINTEXT://:9092 (every interface) is accepted and
// advertised at the machine's host name, as Kafka advertises its canonical host name.
func TestListenerRule_EmptyHostAdvertisesTheHostName(t *testing.T) {
	name, err := os.Hostname()
	if err != nil || name == "" {
		t.Skip("no host name")
	}
	cfg := Config{NodeID: 0, DataDir: t.TempDir(), Properties: map[string]string{"listeners": "PLAINTEXT://:9092"}}
	if err := cfg.ApplyListenerFlags(config.ListenerFlags{}); err != nil {
		t.Fatal(err)
	}
	specs, err := cfg.listenerSpecs()
	if err != nil {
		t.Fatal(err)
	}
	if specs[0].Bind != ":9092" || specs[0].Advertised != "" {
		t.Fatalf("spec %+v", specs[0])
	}
	if rule := cfg.listenerRule(); rule.AdvertisedHost(":9092") != net.JoinHostPort(name, "9092") {
		t.Fatalf("advertised %q, want %s:9092", rule.AdvertisedHost(":9092"), name)
	}
	cfg.Properties["advertised.listeners"] = "PLAINTEXT://:9093"
	if specs, err = cfg.listenerSpecs(); err != nil || specs[0].Advertised != net.JoinHostPort(name, "9093") {
		t.Fatalf("an empty advertised host: %+v %v", specs, err)
	}
}
