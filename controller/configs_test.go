package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// AlterConfigs commits each resource's Config records on its own: incremental SET,
// DELETE and APPEND against the current value, a replacing set deleting what it does
// not name; a resource listed twice, an unknown topic, an internal topic, a bad value
// and an append to a non-list config are refused and write nothing.
func TestAlterConfigsDecision(t *testing.T) {
	c, q := activeController(t, 0)
	c.cfg.Properties = map[string]string{}
	ctx := testCtx(t)
	for _, spec := range []TopicSpec{{Name: "t", Partitions: 1, ReplicationFactor: 1}, {Name: TransactionStateTopic, Partitions: 1, ReplicationFactor: 1, Internal: true}} {
		if _, _, err := c.createTopic(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	topic := metadata.ConfigResource{Type: metadata.TopicResource, Name: "t"}
	str := func(s string) *string { return &s }
	errs := c.AlterConfigs(ctx, []ConfigsSpec{{Resource: topic, Configs: []ConfigAlteration{
		{Name: "retention.ms", Op: ConfigSet, Value: str("1000")},
		{Name: "cleanup.policy", Op: ConfigAppend, Value: str("compact")},
	}}}, false, 5*time.Second)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	got := q.Image().ResourceConfigs(topic)
	if got["retention.ms"] != "1000" || got["cleanup.policy"] != "delete,compact" {
		t.Fatalf("configs after SET and APPEND: %v", got)
	}
	offset := q.Image().Offset
	refused := []struct {
		spec ConfigsSpec
		want error
	}{
		{ConfigsSpec{Resource: metadata.ConfigResource{Type: metadata.TopicResource, Name: "missing"}, Configs: []ConfigAlteration{{Name: "retention.ms", Value: str("1")}}}, metadata.ErrUnknownTopic},
		{ConfigsSpec{Resource: metadata.ConfigResource{Type: metadata.TopicResource, Name: TransactionStateTopic}, Configs: []ConfigAlteration{{Name: "retention.ms", Value: str("1")}}}, ErrInternalTopic},
		{ConfigsSpec{Resource: topic, Configs: []ConfigAlteration{{Name: "retention.ms", Value: str("x")}}}, metadata.ErrInvalidConfig},
		{ConfigsSpec{Resource: topic, Configs: []ConfigAlteration{{Name: "retention.ms", Op: ConfigAppend, Value: str("1")}}}, metadata.ErrInvalidConfig},
		{ConfigsSpec{Resource: topic, Configs: []ConfigAlteration{{Name: "retention.ms", Op: 9, Value: str("1")}}}, ErrInvalidRequest},
		{ConfigsSpec{Resource: metadata.ConfigResource{Type: 99, Name: "x"}}, ErrInvalidRequest},
	}
	for _, r := range refused {
		if errs := c.AlterConfigs(ctx, []ConfigsSpec{r.spec}, false, 5*time.Second); !errors.Is(errs[0], r.want) {
			t.Errorf("%+v: %v, want %v", r.spec, errs[0], r.want)
		}
	}
	twice := ConfigsSpec{Resource: topic, Configs: []ConfigAlteration{{Name: "retention.ms", Value: str("5")}}}
	for _, err := range c.AlterConfigs(ctx, []ConfigsSpec{twice, twice}, false, 5*time.Second) {
		if !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("a resource listed twice: %v", err)
		}
	}
	if q.Image().Offset != offset {
		t.Fatal("a refused change wrote")
	}
	errs = c.AlterConfigs(ctx, []ConfigsSpec{{Resource: topic, Replace: true, Configs: []ConfigAlteration{{Name: "segment.ms", Value: str("60000")}}}}, false, 5*time.Second)
	if got := q.Image().ResourceConfigs(topic); errs[0] != nil || len(got) != 1 || got["segment.ms"] != "60000" {
		t.Fatalf("replacing set: %v, configs %v", errs[0], got)
	}
}
