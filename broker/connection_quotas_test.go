package broker

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/fsm"
)

func TestParseConnectionOverrides(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]int
		err  bool
	}{
		{in: "", want: map[string]int{}},
		{in: "  ", want: map[string]int{}},
		{in: "10.0.0.1:5", want: map[string]int{"10.0.0.1": 5}},
		{in: " a.example : 1 , 10.0.0.2:0", want: map[string]int{"a.example": 1, "10.0.0.2": 0}},
		{in: "::1:5", want: map[string]int{"::1": 5}},
		{in: "[::1]:5", want: map[string]int{"[::1]": 5}},
		{in: "host", err: true},
		{in: "host:x", err: true},
		{in: ":5", err: true},
		{in: "a:1,", err: true},
		{in: "a:99999999999", err: true},
	}
	for _, c := range cases {
		got, err := config.ParseConnectionOverrides(c.in)
		if (err != nil) != c.err {
			t.Errorf("%q: error %v, expected error %v", c.in, err, c.err)
			continue
		}
		if !c.err && fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%q: %v, expected %v", c.in, got, c.want)
		}
	}
	def, _ := config.BrokerDef("max.connections.per.ip.overrides")
	if err := config.CheckValue(def, "10.0.0.1:x"); err == nil || !strings.Contains(err.Error(), "max.connections.per.ip.overrides") {
		t.Fatalf("a bad override was accepted: %v", err)
	}
	if err := config.ValidateDynamicBrokerConfig("max.connections.per.ip.overrides", "10.0.0.1:4", false); err != nil {
		t.Fatalf("a dynamic override was refused: %v", err)
	}
	if err := config.ValidateDynamicBrokerConfig("max.connections", "-1", false); err == nil {
		t.Fatal("max.connections=-1 accepted")
	}
}

// TestNewConnectionQuotas: the static limits are read from the properties, and
// max.connections.per.ip=0 without overrides stops the broker (as Kafka).
func TestNewConnectionQuotas(t *testing.T) {
	specs := []config.ListenerSpec{{Name: "PLAINTEXT"}, {Name: "EXTERNAL"}}
	b := &Broker{logger: hclog.NewNullLogger(), machine: fsm.New(), cfg: Config{Properties: map[string]string{
		"max.connections": "7", "max.connections.per.ip": "3", "listener.name.external.max.connections": "5",
	}}}
	q, err := b.connectionQuotaConfig(specs, "PLAINTEXT")
	if err != nil {
		t.Fatal(err)
	}
	if s := q.Settings(); s.MaxConnections != 7 || s.PerIP != 3 || s.PerIPOverrides != "" {
		t.Fatalf("settings %+v", s)
	}
	if _, limited := q.ListenerMax["PLAINTEXT"]; q.ListenerMax["EXTERNAL"] != 5 || limited || !q.Protected || q.InterBroker != "PLAINTEXT" {
		t.Fatalf("listener limits %v, protected %v", q.ListenerMax, q.Protected)
	}
	for _, name := range []string{"listener.name.external.max.connections", "listener.name.sasl_ssl.sasl.server.max.receive.size"} {
		if def, ok := config.ListenerPropertyDef(name); !ok || def.Type != config.TypeInt || !def.ReadOnly {
			t.Errorf("%s: %+v, %v; expected a read-only INT", name, def, ok)
		}
	}
	b.cfg.Properties = map[string]string{"max.connections.per.ip": "0"}
	if _, err := b.connectionQuotaConfig(specs, "PLAINTEXT"); !errors.Is(err, config.ErrInvalidBrokerConfig) {
		t.Fatalf("max.connections.per.ip=0 without overrides: %v", err)
	}
	b.cfg.Properties["max.connections.per.ip.overrides"] = "10.0.0.1:2"
	if _, err := b.connectionQuotaConfig(specs, "PLAINTEXT"); err != nil {
		t.Fatal(err)
	}
}
