package integration

// kcat (librdkafka), sarama and confluent-kafka-python over the secured listeners, and
// kcat refused with a wrong password.

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/xdg-go/scram"
)

func TestSecurity_Kcat(t *testing.T) {
	t.Parallel()
	kcatBinary(t)
	s := startSecureNode(t)
	s.CreateTopic(t, "kcat-secure", 1, nil)
	cases := []struct {
		name, listener string
		props          []string
	}{
		{"SASL_SSL SCRAM-SHA-512", "SASL_SSL", []string{"security.protocol=SASL_SSL", "sasl.mechanisms=SCRAM-SHA-512",
			"sasl.username=" + scramUser, "sasl.password=" + scramPassword, "ssl.ca.location=" + s.ca.truststore}},
		{"SASL_PLAINTEXT SCRAM-SHA-256", "SASL_PLAINTEXT", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=SCRAM-SHA-256",
			"sasl.username=" + scramUser, "sasl.password=" + scramPassword}},
		{"SASL_PLAINTEXT PLAIN", "SASL_PLAINTEXT", []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN",
			"sasl.username=" + plainUser, "sasl.password=" + plainPassword}},
		{"SSL client certificate", "SSL", []string{"security.protocol=SSL", "ssl.ca.location=" + s.ca.truststore,
			"ssl.certificate.location=" + s.client.keystore, "ssl.key.location=" + s.client.keystore}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-b", s.addr(tc.listener)}
			for _, p := range tc.props {
				args = append(args, "-X", p)
			}
			value := fmt.Sprintf("kcat-%d", i)
			runKcat(t, value+"\n", append(args, "-P", "-t", "kcat-secure", "-p", "0")...)
			out := runKcat(t, "", append(args, "-C", "-t", "kcat-secure", "-p", "0", "-o", "beginning", "-e", "-q")...)
			if !strings.Contains(out, value) {
				t.Fatalf("kcat read %q, expected %q among it", out, value)
			}
		})
	}
	t.Run("wrong password", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(testContext(t), kcatTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, kcatBinary(t), "-b", s.addr("SASL_PLAINTEXT"), "-X", "security.protocol=SASL_PLAINTEXT",
			"-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username="+scramUser, "-X", "sasl.password=wrong", "-L", "-m", "5").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "Authentication failed") {
			t.Fatalf("kcat -L with a wrong password: %v\n%s", err, out)
		}
	})
}

// saramaSCRAM adapts xdg-go/scram to sarama's SCRAMClient.
type saramaSCRAM struct {
	hash scram.HashGeneratorFcn
	conv *scram.ClientConversation
}

func (x *saramaSCRAM) Begin(user, password, authzID string) error {
	cl, err := x.hash.NewClient(user, password, authzID)
	if err != nil {
		return err
	}
	x.conv = cl.NewConversation()
	return nil
}
func (x *saramaSCRAM) Step(challenge string) (string, error) { return x.conv.Step(challenge) }
func (x *saramaSCRAM) Done() bool                            { return x.conv.Done() }

func TestSecurity_Sarama(t *testing.T) {
	t.Parallel()
	s := startSecureNode(t)
	cases := []struct {
		name, listener string
		setup          func(*sarama.Config)
	}{
		{"SASL_SSL PLAIN", "SASL_SSL", func(c *sarama.Config) {
			c.Net.TLS.Enable, c.Net.TLS.Config = true, s.ca.clientTLS(nil)
			c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypePlaintext
			c.Net.SASL.User, c.Net.SASL.Password = plainUser, plainPassword
		}},
		{"SASL_PLAINTEXT SCRAM-SHA-256", "SASL_PLAINTEXT", func(c *sarama.Config) {
			c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA256
			c.Net.SASL.User, c.Net.SASL.Password = scramUser, scramPassword
			c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: sha256.New} }
		}},
		{"SASL_SSL SCRAM-SHA-512", "SASL_SSL", func(c *sarama.Config) {
			c.Net.TLS.Enable, c.Net.TLS.Config = true, s.ca.clientTLS(nil)
			c.Net.SASL.Enable, c.Net.SASL.Mechanism = true, sarama.SASLTypeSCRAMSHA512
			c.Net.SASL.User, c.Net.SASL.Password = scramUser, scramPassword
			c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{hash: sha512.New} }
		}},
		{"SSL client certificate", "SSL", func(c *sarama.Config) {
			c.Net.TLS.Enable, c.Net.TLS.Config = true, s.ca.clientTLS(&s.client)
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sarama.NewConfig()
			cfg.Producer.Return.Successes = true
			tc.setup(cfg)
			topic := fmt.Sprintf("sarama-secure-%d", i)
			addrs := []string{s.addr(tc.listener)}
			prod, err := bounded(t, saramaTimeout, "NewSyncProducer", func() (sarama.SyncProducer, error) { return sarama.NewSyncProducer(addrs, cfg) })
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			_, offset, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder("sarama")})
			if err != nil {
				t.Fatal(err)
			}
			cons, err := bounded(t, saramaTimeout, "NewConsumer", func() (sarama.Consumer, error) { return sarama.NewConsumer(addrs, cfg) })
			if err != nil {
				t.Fatal(err)
			}
			defer cons.Close()
			pc, err := cons.ConsumePartition(topic, 0, offset)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			select {
			case m := <-pc.Messages():
				if string(m.Value) != "sarama" {
					t.Fatalf("read %q", m.Value)
				}
			case <-time.After(saramaTimeout):
				t.Fatal("no record read back")
			}
		})
	}
}

func TestSecurity_ConfluentPython(t *testing.T) {
	t.Parallel()
	py := confluentClient(t)
	s := startSecureNode(t)
	script, err := filepath.Abs("testdata/confluent/secure.py")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, listener string
		config         map[string]string
	}{
		{"SASL_SSL SCRAM-SHA-256", "SASL_SSL", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
			"sasl.username": scramUser, "sasl.password": scramPassword, "ssl.ca.location": s.ca.truststore}},
		{"SASL_PLAINTEXT PLAIN", "SASL_PLAINTEXT", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
			"sasl.username": plainUser, "sasl.password": plainPassword}},
		{"SSL client certificate", "SSL", map[string]string{"security.protocol": "SSL", "ssl.ca.location": s.ca.truststore,
			"ssl.certificate.location": s.client.keystore, "ssl.key.location": s.client.keystore}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conf, _ := json.Marshal(tc.config)
			ctx, cancel := context.WithTimeout(testContext(t), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, py.argv[0], "-u", script, s.addr(tc.listener), fmt.Sprintf("python-secure-%d", i), "5")
			cmd.Env = append(cmd.Environ(), "PETREL_CLIENT_CONFIG="+string(conf))
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "consumed 5") {
				t.Fatalf("secure.py: %v\n%s", err, out)
			}
		})
	}
}
