package broker

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/petrel-broker/petrel/config"
)

// TestDescribeConfigsHidesSecrets: no principal reads a secret through DescribeConfigs,
// in any version, with synonyms and documentation (it returned sasl.jaas.config with
// every PLAIN password in clear, is_sensitive=false); --print-config and configuration
// errors show "[hidden]".
func TestDescribeConfigsHidesSecrets(t *testing.T) {
	const secret = "s3cr3t-pw"
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + secret + `" user_admin="` + secret + `";`
	props := map[string]string{
		"sasl.jaas.config": jaas,
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
		"ssl.key.password":            secret,
		"ssl.keystore.password":       secret,
		"ssl.truststore.password":     secret,
		"ssl.keystore.key":            "-----BEGIN PRIVATE KEY-----" + secret,
		"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----" + secret,
		"password.encoder.secret":     secret, // not implemented: printed only as "[hidden]"
	}
	b := startTestBroker(t, "", props)
	cl := newClient(t, b)
	sensitive := map[string]bool{}
	for v := int16(1); v <= 4; v++ {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms, req.IncludeDocumentation = v, true, true
		for _, name := range []string{"0", ""} {
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, name
			req.Resources = append(req.Resources, res)
		}
		resp, err := req.RequestWith(testContext(t), cl)
		if err != nil {
			t.Fatal(err)
		}
		if raw := resp.AppendTo(nil); bytes.Contains(raw, []byte(secret)) {
			t.Fatalf("v%d: the answer holds the secret", v)
		}
		for _, r := range resp.Resources {
			for _, c := range r.Configs {
				if !config.Sensitive(c.Name) {
					continue
				}
				sensitive[c.Name] = true
				if !c.IsSensitive || c.Value != nil {
					t.Errorf("v%d: %s sensitive=%v value=%v, want sensitive with a null value", v, c.Name, c.IsSensitive, c.Value)
				}
				if v >= 3 && c.ConfigType != kmsg.ConfigTypePassword {
					t.Errorf("v%d: %s has type %v, want PASSWORD", v, c.Name, c.ConfigType)
				}
				for _, s := range c.ConfigSynonyms {
					if s.Value != nil {
						t.Errorf("v%d: synonym %s of %s has a value", v, s.Name, c.Name)
					}
				}
			}
		}
	}
	for _, name := range []string{"sasl.jaas.config", "ssl.key.password", "ssl.keystore.key", "ssl.truststore.certificates"} {
		if !sensitive[name] {
			t.Errorf("%s was not described", name)
		}
	}

	cfg := Config{NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0", Properties: props}
	eff, warnings, _ := CheckConfig(cfg)
	for _, p := range eff {
		if strings.Contains(p.Value, secret) || strings.Contains(p.From, secret) {
			t.Errorf("--print-config shows %s=%s", p.Name, p.Value)
		}
	}
	for _, w := range warnings {
		if strings.Contains(w, secret) {
			t.Errorf("a warning shows the secret: %s", w)
		}
	}
}
