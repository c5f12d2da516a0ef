package controller

import (
	"errors"
	"strings"
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

// AlterConfigs on a GROUP resource: a group id needs no group to exist; the group's
// resulting configs must lie within the broker's group.consumer.* bounds (an unset one
// taking the broker's value), else nothing is written; a replacing AlterConfigs works
// as for topics; an empty group name is INVALID_REQUEST.
func TestAlterConfigsGroupResource(t *testing.T) {
	c, q := activeController(t, 0)
	c.cfg.Properties = map[string]string{"group.consumer.max.session.timeout.ms": "70000"}
	ctx := testCtx(t)
	g := metadata.ConfigResource{Type: metadata.GroupResource, Name: "g"}
	str := func(s string) *string { return &s }
	alter := func(spec ConfigsSpec) error {
		t.Helper()
		return c.AlterConfigs(ctx, []ConfigsSpec{spec}, false, 5*time.Second)[0]
	}
	if err := alter(ConfigsSpec{Resource: g, Configs: []ConfigAlteration{{Name: "consumer.session.timeout.ms", Value: str("70000")}}}); err != nil {
		t.Fatal(err)
	}
	if got := q.Image().ResourceConfigs(g); got["consumer.session.timeout.ms"] != "70000" {
		t.Fatalf("group configs %v", got)
	}
	offset := q.Image().Offset
	for _, r := range []struct {
		spec ConfigsSpec
		want error
		text string
	}{
		{ConfigsSpec{Resource: g, Configs: []ConfigAlteration{{Name: "consumer.session.timeout.ms", Value: str("70001")}}}, metadata.ErrInvalidConfig,
			"consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{ConfigsSpec{Resource: g, Configs: []ConfigAlteration{{Name: "consumer.heartbeat.interval.ms", Value: str("4000")}}}, metadata.ErrInvalidConfig,
			"consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{ConfigsSpec{Resource: g, Configs: []ConfigAlteration{{Name: "share.unknown.setting", Value: str("45000")}}}, metadata.ErrInvalidConfig,
			"Unknown group config name: share.unknown.setting"},
		{ConfigsSpec{Resource: g, Configs: []ConfigAlteration{{Name: "consumer.session.timeout.ms", Op: ConfigAppend, Value: str("1")}}}, metadata.ErrInvalidConfig,
			"Config value append is not allowed for config key: consumer.session.timeout.ms"},
		{ConfigsSpec{Resource: metadata.ConfigResource{Type: metadata.GroupResource}, Configs: []ConfigAlteration{{Name: "consumer.session.timeout.ms", Value: str("50000")}}}, ErrInvalidRequest,
			"Group name must not be empty"},
	} {
		err := alter(r.spec)
		if !errors.Is(err, r.want) || !strings.Contains(err.Error(), r.text) {
			t.Errorf("%+v: %v, want %v %q", r.spec, err, r.want, r.text)
		}
	}
	if q.Image().Offset != offset {
		t.Fatalf("refused changes wrote records")
	}
	// AlterConfigs (replacing): the heartbeat set, the session timeout not named, deleted.
	if err := alter(ConfigsSpec{Resource: g, Replace: true, Configs: []ConfigAlteration{{Name: "consumer.heartbeat.interval.ms", Value: str("6000")}}}); err != nil {
		t.Fatal(err)
	}
	if got := q.Image().ResourceConfigs(g); len(got) != 1 || got["consumer.heartbeat.interval.ms"] != "6000" {
		t.Fatalf("group configs after a replacing AlterConfigs: %v", got)
	}
}
