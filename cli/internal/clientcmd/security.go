package clientcmd

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/config"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	ucli "github.com/urfave/cli/v2"
)

// commandConfigFlag is --command-config, Kafka's tools' file of client properties
// (security.protocol, sasl.mechanism, sasl.jaas.config or sasl.username and
// sasl.password, ssl.truststore.location, ssl.keystore.location, ...).
func commandConfigFlag() ucli.Flag {
	return &ucli.StringFlag{
		Name:    "command-config",
		Usage:   "Kafka client properties file for a secured cluster (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...)",
		EnvVars: []string{"PETREL_COMMAND_CONFIG"},
	}
}

// securityOpts turns --command-config into kgo options: a TLS dialer and a SASL
// mechanism.
func securityOpts(c *ucli.Context, dialTimeout time.Duration) ([]kgo.Opt, error) {
	path := c.String("command-config")
	if path == "" {
		return nil, nil
	}
	props, err := config.LoadProperties(path)
	if err != nil {
		return nil, fmt.Errorf("--command-config: %w", err)
	}
	cs, err := broker.ParseClientSecurity(props)
	if err != nil {
		return nil, fmt.Errorf("--command-config %s: %w", path, err)
	}
	var opts []kgo.Opt
	if cs.TLS != nil {
		base := cs.TLS
		nd := &net.Dialer{Timeout: dialTimeout}
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			cfg := base.Clone()
			if cfg.ServerName == "" {
				if h, _, err := net.SplitHostPort(host); err == nil {
					cfg.ServerName = h
				}
			}
			return (&tls.Dialer{NetDialer: nd, Config: cfg}).DialContext(ctx, network, host)
		}))
	}
	if cs.Mechanism != "" {
		var m sasl.Mechanism
		switch cs.Mechanism {
		case "PLAIN":
			m = plain.Auth{User: cs.Username, Pass: cs.Password}.AsMechanism()
		case "SCRAM-SHA-256":
			m = scram.Auth{User: cs.Username, Pass: cs.Password}.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = scram.Auth{User: cs.Username, Pass: cs.Password}.AsSha512Mechanism()
		}
		opts = append(opts, kgo.SASL(m))
	}
	return opts, nil
}
