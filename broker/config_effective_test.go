package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/petrel-broker/petrel/config"
)

func TestCheckConfig_EffectiveValuesAndSources(t *testing.T) {
	cfg := Config{
		NodeID: 3, DataDir: "/data/3", Listen: "127.0.0.1:9092", RaftListen: "127.0.0.1:9093",
		Properties: map[string]string{
			"num.partitions":        "4",
			"log.retention.hours":   "1",
			"log.segment.bytes":     "1048576",
			"listeners":             "PLAINTEXT://a:1,SSL://b:2",
			"ssl.keystore.password": "secret",
			"log.retention.hour":    "2",
		},
		PropertySources: map[string]string{"num.partitions": config.SourceConfigFile, "log.segment.bytes": config.SourceEnvironment},
	}
	props, warnings, err := CheckConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings %q, expected 1 (typo)", warnings)
	}
	type row struct{ value, source, from, status string }
	got := map[string][]row{}
	for _, p := range props {
		got[p.Name] = append(got[p.Name], row{p.Value, p.Source, p.From, p.Status})
	}
	want := map[string][]row{
		"num.partitions":             {{"4", config.SourceConfigFile, "", ""}},
		"log.segment.bytes":          {{"1048576", config.SourceEnvironment, "", ""}},
		"log.retention.hours":        {{"1", config.SourceSet, "", ""}},
		"log.retention.ms":           {{"3600000", config.SourceSet, "log.retention.hours=1", ""}},
		"default.replication.factor": {{"1", config.SourceDefault, "", ""}},
		"node.id":                    {{"3", "--node-id", "", ""}},
		"log.dirs":                   {{"/data/3/logs", "--data-dir", "", ""}},
		"listeners":                  {{"PLAINTEXT://a:1,SSL://b:2", config.SourceSet, "", ""}},
		"advertised.listeners":       {{"", config.SourceDefault, "", ""}},
		"ssl.keystore.password":      {{"[hidden]", config.SourceSet, "", ""}},
		"log.retention.hour":         {{"2", config.SourceSet, "", "unknown"}},
	}
	for name, w := range want {
		if len(got[name]) != len(w) {
			t.Errorf("%s: %+v, expected %+v", name, got[name], w)
			continue
		}
		for i := range w {
			if got[name][i] != w[i] {
				t.Errorf("%s: %+v, expected %+v", name, got[name][i], w[i])
			}
		}
	}
	for _, name := range config.BrokerNames() {
		if len(got[name]) == 0 {
			t.Errorf("%s is missing from the effective configuration", name)
		}
	}

	cfg.Properties["log.retention.ms"] = "-5"
	if props, _, err := CheckConfig(cfg); err != nil || !hasProperty(props, "log.retention.ms", "-1") {
		t.Fatalf("log.retention.ms=-5 is not read as -1: %v", err)
	}
	cfg.Properties["log.segment.bytes"] = "-5"
	if _, _, err := CheckConfig(cfg); !errors.Is(err, config.ErrInvalidBrokerConfig) {
		t.Fatalf("log.segment.bytes=-5: %v", err)
	}
}

// TestDescribeConfigs_SynonymsNameTheSuppliedProperty: as in Kafka, a value derived from
// log.retention.hours lists that property as its STATIC_BROKER_CONFIG synonym, then the
// DEFAULT_CONFIG one.
func TestDescribeConfigs_SynonymsNameTheSuppliedProperty(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.retention.hours": "48", "log.segment.bytes": "1048576"})
	cl := newClient(t, b)
	ctx := testContext(t)
	if _, err := newAdmin(t, b).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": strp("2097152")}, "syn"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	for _, rt := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "syn"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = rt.typ, rt.name
		res.ConfigNames = []string{"retention.ms", "segment.bytes", "log.retention.ms", "log.segment.bytes"}
		req.Resources = append(req.Resources, res)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, res := range resp.Resources {
		for _, c := range res.Configs {
			var syns []string
			for _, s := range c.ConfigSynonyms {
				syns = append(syns, fmt.Sprintf("%s:%s=%s", s.Source, s.Name, *s.Value))
			}
			got[c.Name] = fmt.Sprintf("%s %v", *c.Value, syns)
		}
	}
	for name, want := range map[string]string{
		"retention.ms":      "172800000 [STATIC_BROKER_CONFIG:log.retention.hours=48 DEFAULT_CONFIG:log.retention.hours=168]",
		"segment.bytes":     "2097152 [DYNAMIC_TOPIC_CONFIG:segment.bytes=2097152 STATIC_BROKER_CONFIG:log.segment.bytes=1048576 DEFAULT_CONFIG:log.segment.bytes=1073741824]",
		"log.retention.ms":  "172800000 [STATIC_BROKER_CONFIG:log.retention.hours=48 DEFAULT_CONFIG:log.retention.hours=168]",
		"log.segment.bytes": "1048576 [STATIC_BROKER_CONFIG:log.segment.bytes=1048576 DEFAULT_CONFIG:log.segment.bytes=1073741824]",
	} {
		if got[name] != want {
			t.Errorf("%s: %s, expected %s", name, got[name], want)
		}
	}
}

func hasProperty(props []config.EffectiveProperty, name, value string) bool {
	for _, p := range props {
		if p.Name == name && p.Value == value {
			return true
		}
	}
	return false
}
