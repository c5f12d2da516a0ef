package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// listenersOf is a Listeners with the command line's flags applied, as a node reads them.
func listenersOf(t *testing.T, props map[string]string, f ListenerFlags) (*Listeners, error) {
	t.Helper()
	l := &Listeners{Properties: props, Sources: map[string]string{}, Hostname: func() (string, error) { return "host.example", nil }}
	return l, l.ApplyFlags(f)
}

// refusal is a listener configuration refused with want in the error.
type refusal struct {
	name  string
	props map[string]string
	flags ListenerFlags
	want  string
}

// The valid listener configurations: each listener with its protocol and advertised
// address, the controller listener left out.
func TestListeners_Specs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		flags ListenerFlags
		want  []ListenerSpec
	}{
		{"defaults: PLAINTEXT://--listen", nil, ListenerFlags{},
			[]ListenerSpec{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Bind: DefaultListen}}},
		{"--advertised for the first listener", nil, ListenerFlags{Listen: "127.0.0.1:0", Advertised: "kafka.example:9092"},
			[]ListenerSpec{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Bind: "127.0.0.1:0", Advertised: "kafka.example:9092"}}},
		{"named listeners, lower case, mapped", map[string]string{
			"listeners":                      "internal://127.0.0.1:9092, EXTERNAL://10.0.0.1:9094",
			"advertised.listeners":           "EXTERNAL://broker0.example:9094",
			"listener.security.protocol.map": "INTERNAL:sasl_plaintext,EXTERNAL:SSL",
		}, ListenerFlags{}, []ListenerSpec{
			{Name: "INTERNAL", Protocol: "SASL_PLAINTEXT", Bind: "127.0.0.1:9092"},
			{Name: "EXTERNAL", Protocol: "SSL", Bind: "10.0.0.1:9094", Advertised: "broker0.example:9094"},
		}},
		{"the controller listener is the Raft listener", map[string]string{
			"listeners":                      "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
			"controller.listener.names":      "controller",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		}, ListenerFlags{}, []ListenerSpec{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Bind: "127.0.0.1:9092"}}},
		{"an empty host is advertised at the host name", map[string]string{
			"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://:9093",
		}, ListenerFlags{}, []ListenerSpec{{Name: "PLAINTEXT", Protocol: "PLAINTEXT", Bind: ":9092", Advertised: "host.example:9093"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := listenersOf(t, tc.props, tc.flags)
			if err != nil {
				t.Fatal(err)
			}
			got, err := l.Specs()
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("specs %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

// The refusals, in Kafka's words where Kafka has them.
func TestListeners_SpecsRefused(t *testing.T) {
	const ctrl = "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
	for _, tc := range []refusal{
		{"0.0.0.0 advertised from --listen", nil, ListenerFlags{Listen: "0.0.0.0:0"},
			"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address. (listeners PLAINTEXT (advertised at its own address; set --advertised or advertised.listeners))"},
		{"0.0.0.0 advertised", map[string]string{"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"}, ListenerFlags{},
			"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address. (advertised.listeners)"},
		{":: advertised", map[string]string{"advertised.listeners": "PLAINTEXT://[::]:9092"}, ListenerFlags{}, "nonroutable meta-address ::."},
		{"unmapped name", map[string]string{"listeners": "EXTERNAL://127.0.0.1:0"}, ListenerFlags{},
			"No security protocol defined for listener EXTERNAL (add EXTERNAL:PLAINTEXT, or SSL, SASL_PLAINTEXT, SASL_SSL, to listener.security.protocol.map)"},
		{"advertised name not a listener", map[string]string{"advertised.listeners": "SSL://127.0.0.1:9093"}, ListenerFlags{},
			"advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found SSL. The valid options based on the current configuration are PLAINTEXT"},
		{"not NAME://host:port", map[string]string{"listeners": "127.0.0.1:9092"}, ListenerFlags{},
			`listeners entry "127.0.0.1:9092" is not NAME://host:port`},
		{"no port", map[string]string{"listeners": "PLAINTEXT://127.0.0.1"}, ListenerFlags{}, `listeners entry "PLAINTEXT://127.0.0.1": address 127.0.0.1: missing port in address`},
		{"a name twice", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:1,plaintext://127.0.0.1:2"}, ListenerFlags{}, "listeners names listener PLAINTEXT twice"},
		{"empty", map[string]string{"listeners": " , "}, ListenerFlags{}, "listeners is empty"},
		{"unknown protocol", map[string]string{"listener.security.protocol.map": "PLAINTEXT:TLS"}, ListenerFlags{},
			`listener.security.protocol.map entry "PLAINTEXT:TLS" is not NAME:PLAINTEXT|SSL|SASL_PLAINTEXT|SASL_SSL`},
		{"only a controller listener", map[string]string{"listeners": "CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT"}, ListenerFlags{}, "There must be at least one broker listener that is not a controller listener"},
		{"two controller listeners", map[string]string{"listeners": ctrl + ",C2://127.0.0.1:9095", "controller.listener.names": "CONTROLLER,C2",
			"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,C2:PLAINTEXT,PLAINTEXT:PLAINTEXT"}, ListenerFlags{}, "listeners has 2 controller listeners"},
		{"an SSL controller listener", map[string]string{"listeners": ctrl, "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT"}, ListenerFlags{}, "set petrel.raft.security.protocol=SSL (mutual TLS) or PLAINTEXT"},
		{"an unmapped controller listener", map[string]string{"listeners": ctrl, "controller.listener.names": "CONTROLLER",
			"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT"}, ListenerFlags{}, "No security protocol defined for listener CONTROLLER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := listenersOf(t, tc.props, tc.flags)
			if err == nil {
				_, err = l.Specs()
			}
			if !errors.Is(err, ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A flag and the property it is the shorthand of may not disagree; the controller
// listener supplies the Raft listener.
func TestListeners_ApplyFlags(t *testing.T) {
	kraft := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", "controller.listener.names": "CONTROLLER",
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"}
	l, err := listenersOf(t, kraft, ListenerFlags{})
	if err != nil || l.RaftListen != "127.0.0.1:9093" || l.Listen != DefaultListen {
		t.Fatalf("KRaft file: %+v %v", l, err)
	}
	if l, err = listenersOf(t, kraft, ListenerFlags{RaftListen: "127.0.0.1:9093"}); err != nil {
		t.Fatalf("the same --raft-listen: %v", err)
	}
	for _, tc := range []refusal{
		{"--raft-listen", kraft, ListenerFlags{RaftListen: "127.0.0.1:7000"},
			"--raft-listen 127.0.0.1:7000 conflicts with listener CONTROLLER://127.0.0.1:9093, which controller.listener.names makes the Raft listener; give one of them"},
		{"--listen", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092"}, ListenerFlags{Listen: "127.0.0.1:7000"},
			"--listen 127.0.0.1:7000 conflicts with listeners=PLAINTEXT://127.0.0.1:9092 (--set): --listen is the shorthand for listeners=PLAINTEXT://127.0.0.1:7000; give one of them"},
		{"--advertised", map[string]string{"listeners": "SSL://127.0.0.1:9092", "advertised.listeners": "SSL://a.example:9092"}, ListenerFlags{Advertised: "b.example:9092"},
			"--advertised b.example:9092 conflicts with advertised.listeners=SSL://a.example:9092 (--set): --advertised is the shorthand for advertised.listeners=SSL://b.example:9092; give one of them"},
	} {
		if _, err := listenersOf(t, tc.props, tc.flags); !errors.Is(err, ErrInvalidBrokerConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	// The flag and the property agreeing is no conflict; without a controller listener
	// --raft-listen (or its default) is the Raft listener.
	l, err = listenersOf(t, map[string]string{"listeners": "PLAINTEXT://127.0.0.1:9092", "advertised.listeners": "PLAINTEXT://a.example:9092"},
		ListenerFlags{Listen: "127.0.0.1:9092", Advertised: "a.example:9092"})
	if err != nil || l.RaftListen != DefaultRaftListen || l.Advertised != "a.example:9092" {
		t.Fatalf("agreeing flags: %+v %v", l, err)
	}
	// A Raft listener bound before start (the tests' hook) is not held to the
	// controller listener's address.
	l = &Listeners{Properties: kraft, RaftListen: "127.0.0.1:7000", Listen: DefaultListen, RaftBound: true}
	if _, err := l.Specs(); err != nil {
		t.Fatalf("bound Raft listener: %v", err)
	}
	l.RaftBound = false
	if _, err := l.Specs(); err == nil || !strings.Contains(err.Error(), "but --raft-listen is 127.0.0.1:7000") {
		t.Fatalf("unbound: %v", err)
	}
}

// An address with an empty host is advertised at the machine's host name; without one,
// as it is.
func TestListeners_AdvertisedHost(t *testing.T) {
	l := &Listeners{Hostname: func() (string, error) { return "host.example", nil }}
	for in, want := range map[string]string{":9092": "host.example:9092", "10.0.0.1:9092": "10.0.0.1:9092", "bad": "bad"} {
		if got := l.AdvertisedHost(in); got != want {
			t.Errorf("%q advertised at %q, want %q", in, got, want)
		}
	}
	l.Hostname = func() (string, error) { return "", errors.New("no name") }
	if got := l.AdvertisedHost(":9092"); got != ":9092" {
		t.Errorf("no host name: %q", got)
	}
	if got := (&Listeners{}).AdvertisedHost(":9092"); got != ":9092" {
		t.Errorf("nil Hostname: %q", got)
	}
}
