package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterBrokerConfig sets name=value on broker resource (an id, or "" for the cluster
// default) and returns the resource's error code and message.
func alterBrokerConfig(t *testing.T, b *Broker, resource, name, value string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, resource
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testContext(t), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// TestAlterConfigs_KafkaDynamicRules: Kafka's rules for changing broker configs at run
// time — read-only ones refused, SSL ones only per listener, per-broker ones only with a
// broker id — and a Kafka property Petrel does not act on is stored (it was refused)
// and listed by DescribeConfigs.
func TestAlterConfigs_KafkaDynamicRules(t *testing.T) {
	b := startTestBroker(t, "", nil)
	for _, c := range []struct {
		resource, name, value, want string
	}{
		{"", "log.retention.check.interval.ms", "1000", "Cannot update these configs dynamically: Set(log.retention.check.interval.ms)"},
		{"0", "listeners", "PLAINTEXT://127.0.0.1:0", "restart the broker with the new value"},
		{"0", "ssl.keystore.location", "/k.pem", "only per-listener using the listener prefix"},
		{"", "sasl.kerberos.min.time.before.relogin", "60000", "broker id must be specified"},
		{"", "bogus.property", "1", "Unknown broker config name: bogus.property"},
	} {
		code, msg := alterBrokerConfig(t, b, c.resource, c.name, c.value)
		if code != kerr.InvalidConfig.Code || !strings.Contains(msg, c.want) {
			t.Errorf("%s=%s on %q: code %d %q, want INVALID_CONFIG %q", c.name, c.value, c.resource, code, msg, c.want)
		}
	}
	for _, c := range [][3]string{{"0", "sasl.kerberos.min.time.before.relogin", "60000"}, {"", "num.io.threads", "16"}} {
		if code, msg := alterBrokerConfig(t, b, c[0], c[1], c[2]); code != 0 {
			t.Fatalf("%s=%s: code %d %q, want it stored", c[1], c[2], code, msg)
		}
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "0"
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(testContext(t), newClient(t, b))
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		if c.Value != nil {
			found[c.Name] = *c.Value
		}
	}
	if found["sasl.kerberos.min.time.before.relogin"] != "60000" || found["num.io.threads"] != "16" {
		t.Errorf("stored inert configs not described: %v %v", found["sasl.kerberos.min.time.before.relogin"], found["num.io.threads"])
	}
}

// TestCleanerConfigsAreDynamic: log.cleaner.threads and log.cleaner.backoff.ms change at
// run time (they were read only at start): the cleaner runs as many threads as the
// cluster default says, up and down.
func TestCleanerConfigsAreDynamic(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"log.cleaner.backoff.ms": "20"})
	c := b.cleaner.Load()
	running := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.running
	}
	testwait.Until(t, 30*time.Second, "one cleaner thread", func() bool { return running() == 1 })
	for _, want := range []int{3, 0, 2} {
		if code, msg := alterBrokerConfig(t, b, "", "log.cleaner.threads", itoa(int64(want))); code != 0 {
			t.Fatalf("log.cleaner.threads=%d: code %d %q", want, code, msg)
		}
		testwait.Until(t, 30*time.Second, "the cleaner threads follow log.cleaner.threads="+itoa(int64(want)), func() bool { return running() == want })
	}
	if code, msg := alterBrokerConfig(t, b, "", "log.cleaner.backoff.ms", "60000"); code != 0 {
		t.Fatalf("log.cleaner.backoff.ms: code %d %q", code, msg)
	}
	testwait.Until(t, 30*time.Second, "the backoff follows", func() bool { return c.backoff() == time.Minute })
}
