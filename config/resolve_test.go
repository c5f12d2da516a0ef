package config

import (
	"errors"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// BrokerValue: a supplied property wins; log.retention.ms falls back to minutes, then
// hours (scaled, any negative value -1), log.roll.ms to log.roll.hours; otherwise
// Kafka's default with no source.
func TestBrokerValueFallbacks(t *testing.T) {
	for _, tt := range []struct {
		props      map[string]string
		name       string
		value, src string
	}{
		{nil, "log.retention.ms", "604800000", ""},
		{map[string]string{"log.retention.hours": "2"}, "log.retention.ms", "7200000", "log.retention.hours"},
		{map[string]string{"log.retention.hours": "2", "log.retention.minutes": "3"}, "log.retention.ms", "180000", "log.retention.minutes"},
		{map[string]string{"log.retention.hours": "2", "log.retention.ms": "-5"}, "log.retention.ms", "-1", "log.retention.ms"},
		{map[string]string{"log.retention.hours": "-3"}, "log.retention.ms", "-1", "log.retention.hours"},
		{map[string]string{"log.roll.hours": "1"}, "log.roll.ms", "3600000", "log.roll.hours"},
		{map[string]string{"num.partitions": "4"}, "num.partitions", "4", "num.partitions"},
	} {
		if v, from := BrokerValue(tt.props, tt.name); v != tt.value || from != tt.src {
			t.Errorf("%v: %s = %q from %q, want %q from %q", tt.props, tt.name, v, from, tt.value, tt.src)
		}
	}
}

// ResolveTopicConfigs takes each config from the first layer that has it: the topic's
// override, this broker's dynamic config, the cluster default, the static property,
// Kafka's default.
func TestResolveTopicConfigsLayers(t *testing.T) {
	dyn := DynamicBrokerConfigs{
		Own:      map[string]string{"log.segment.bytes": "2000000"},
		Defaults: map[string]string{"log.segment.bytes": "3000000", "log.cleanup.policy": "compact"},
	}
	props := map[string]string{"log.retention.hours": "1", "log.cleanup.policy": "delete"}
	got := ResolveTopicConfigs(map[string]string{"max.message.bytes": "5000"}, dyn, props)
	for name, want := range map[string]Resolved{
		"max.message.bytes": {Value: "5000", Source: DynamicTopicConfig},
		"segment.bytes":     {Value: "2000000", Source: DynamicBrokerConfig},
		"cleanup.policy":    {Value: "compact", Source: DynamicDefaultBrokerConfig},
		"retention.ms":      {Value: "3600000", Source: StaticBrokerConfig},
		"retention.bytes":   {Value: "-1", Source: DefaultConfig},
	} {
		if g := got[name]; g.Value != want.Value || g.Source != want.Source || g.Def.Name != name {
			t.Errorf("%s = %q (source %d, def %q), want %q (source %d)", name, g.Value, g.Source, g.Def.Name, want.Value, want.Source)
		}
	}
	if len(got) != len(TopicDefs) {
		t.Errorf("%d configs resolved, want every one of the %d topic configs", len(got), len(TopicDefs))
	}
}

// ChangeRecords: a set is validated by the resource's table, a key named twice is
// INVALID_CONFIG, and deleting a key that is not set writes nothing.
func TestChangeRecords(t *testing.T) {
	s := func(v string) *string { return &v }
	topic := metadata.ConfigResource{Type: metadata.TopicResource, Name: "t"}
	recs, err := ChangeRecords(map[string]string{"retention.ms": "1"}, topic,
		[]Change{{Name: "cleanup.policy", Value: s("compact")}, {Name: "retention.ms"}, {Name: "segment.ms"}})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v, %v", recs, err)
	}
	if c := recs[1].(metadata.ConfigRecord); c.Name != "retention.ms" || c.Value != nil || c.ResourceName != "t" {
		t.Fatalf("delete record %+v", c)
	}
	if _, err := ChangeRecords(nil, topic, []Change{{Name: "retention.ms", Value: s("1")}, {Name: "retention.ms"}}); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Fatalf("twice: %v", err)
	}
	if _, err := ChangeRecords(nil, topic, []Change{{Name: "cleanup.policy", Value: s("sometimes")}}); !errors.Is(err, metadata.ErrInvalidConfig) {
		t.Fatalf("bad value: %v", err)
	}
	broker := metadata.ConfigResource{Type: metadata.BrokerResource, Name: ""}
	if _, err := ChangeRecords(nil, broker, []Change{{Name: "log.cleaner.threads", Value: s("2")}}); err != nil {
		t.Fatalf("dynamic broker config: %v", err)
	}
	unclean := []metadata.Record{metadata.ConfigRecord{Name: "unclean.leader.election.enable", Value: s("TRUE")}}
	if !EnablesUnclean(unclean) || EnablesUnclean([]metadata.Record{metadata.ConfigRecord{Name: "unclean.leader.election.enable"}}) {
		t.Fatal("EnablesUnclean")
	}
	if !ListType(metadata.TopicResource, "cleanup.policy") || ListType(metadata.TopicResource, "retention.ms") || !ListType(metadata.BrokerResource, "sasl.enabled.mechanisms") {
		t.Fatal("ListType")
	}
}

// Effective: flags supply their properties unless listeners or advertised.listeners
// is given itself; a fallback names the supplied property; a secret is hidden; an
// unknown or flag-only supplied property is listed with its status.
func TestEffective(t *testing.T) {
	props := map[string]string{"log.retention.hours": "1", "advertised.listeners": "PLAINTEXT://a:1", "node.id": "7",
		"ssl.keystore.password": "secret", "no.such.property": "x"}
	sources := map[string]string{"log.retention.hours": SourceConfigFile}
	flags := map[string]string{"node.id": "3", "listeners": "PLAINTEXT://127.0.0.1:9092"}
	byName := map[string]EffectiveProperty{}
	for _, p := range Effective(props, sources, flags) {
		key := p.Name + "|" + p.Status
		if _, dup := byName[key]; dup {
			t.Errorf("%s listed twice", key)
		}
		byName[key] = p
	}
	for key, want := range map[string]EffectiveProperty{
		"node.id|":                         {Value: "3", Source: "--node-id"},
		"node.id|ignored (from --node-id)": {Value: "7", Source: SourceSet},
		"listeners|":                       {Value: "PLAINTEXT://127.0.0.1:9092", Source: "--listen"},
		"advertised.listeners|":            {Value: "PLAINTEXT://a:1", Source: SourceSet},
		"log.retention.ms|":                {Value: "3600000", Source: SourceConfigFile, From: "log.retention.hours=1"},
		"ssl.keystore.password|":           {Value: "[hidden]", Source: SourceSet},
		"no.such.property|unknown":         {Value: "x", Source: SourceSet},
		"num.partitions|":                  {Value: "1", Source: SourceDefault},
	} {
		got := byName[key]
		if got.Value != want.Value || got.Source != want.Source || got.From != want.From {
			t.Errorf("%s: %+v, want %+v", key, got, want)
		}
	}
	if p := Effective(nil, nil, nil); len(p) == 0 {
		t.Fatal("no properties")
	} else {
		for _, e := range p {
			if e.Name == "advertised.listeners" && (e.Value != "" || e.Source != SourceDefault) {
				t.Errorf("advertised.listeners without a flag or property: %+v", e)
			}
		}
	}
}
