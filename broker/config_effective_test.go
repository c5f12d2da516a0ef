package broker

import (
	"errors"
	"testing"
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
		PropertySources: map[string]string{"num.partitions": SourceConfigFile, "log.segment.bytes": SourceEnvironment},
	}
	props, warnings, err := CheckConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 3 {
		t.Errorf("warnings %q, expected 3 (listeners ignored, ssl not implemented, typo)", warnings)
	}
	type row struct{ value, source, from, status string }
	got := map[string][]row{}
	for _, p := range props {
		got[p.Name] = append(got[p.Name], row{p.Value, p.Source, p.From, p.Status})
	}
	want := map[string][]row{
		"num.partitions":             {{"4", SourceConfigFile, "", ""}},
		"log.segment.bytes":          {{"1048576", SourceEnvironment, "", ""}},
		"log.retention.hours":        {{"1", SourceSet, "", ""}},
		"log.retention.ms":           {{"3600000", SourceSet, "log.retention.hours=1", ""}},
		"default.replication.factor": {{"1", SourceDefault, "", ""}},
		"node.id":                    {{"3", "--node-id", "", ""}},
		"log.dirs":                   {{"/data/3/logs", "--data-dir", "", ""}},
		"listeners":                  {{"PLAINTEXT://127.0.0.1:9092", "--listen", "", ""}, {"PLAINTEXT://a:1,SSL://b:2", SourceSet, "", "ignored (from --listen)"}},
		"advertised.listeners":       {{"", SourceDefault, "", ""}},
		"ssl.keystore.password":      {{"[hidden]", SourceSet, "", "not implemented"}},
		"log.retention.hour":         {{"2", SourceSet, "", "unknown"}},
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
	for name := range brokerConfigByName {
		if len(got[name]) == 0 {
			t.Errorf("%s is missing from the effective configuration", name)
		}
	}

	cfg.Properties["log.segment.bytes"] = "-5"
	if _, _, err := CheckConfig(cfg); !errors.Is(err, ErrInvalidBrokerConfig) {
		t.Fatalf("log.segment.bytes=-5: %v", err)
	}
}
