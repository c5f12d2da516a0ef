package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/broker"
	ucli "github.com/urfave/cli/v2"
)

func serverFlags() []ucli.Flag {
	flags := []ucli.Flag{
		&ucli.IntFlag{Name: "node-id", Usage: "this node's id (Kafka node.id)", Value: 0},
		&ucli.StringFlag{Name: "data-dir", Usage: "where the node keeps raft/ and logs/", Required: true},
		&ucli.StringFlag{Name: "listen", Usage: "Kafka listener host:port", Value: "127.0.0.1:9092"},
		&ucli.StringFlag{Name: "advertised", Usage: "address put in metadata responses (default: the listener's)"},
		&ucli.StringFlag{Name: "raft-listen", Usage: "Raft transport host:port", Value: "127.0.0.1:9093"},
		&ucli.StringFlag{Name: "voters", Usage: "initial Raft voters, id@host:port,... (default: this node alone)"},
		&ucli.StringSliceFlag{Name: "join", Usage: "Kafka address of a cluster member to ask for membership, for a node not in --voters (repeatable)"},
		&ucli.StringFlag{Name: "metrics-listen", Usage: "HTTP host:port of /metrics, /healthz and /readyz (\"\" for none)", Value: "127.0.0.1:9644"},
		&ucli.BoolFlag{Name: "print-config", Usage: "print every broker property with its value and source, then exit without starting"},
	}
	return append(flags, propertyFlags()...)
}

func serverCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "server",
		Usage: "run a broker node",
		Flags: serverFlags(),
		Action: func(c *ucli.Context) error {
			cfg, err := serverConfig(c, newLogger(c))
			if err != nil {
				return err
			}
			if c.Bool("print-config") {
				return printConfig(c, cfg)
			}
			b, err := broker.Start(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "petrel node %d listening on %s (raft %s)\n", cfg.NodeID, b.Addr(), b.RaftAddr())
			return runUntilSignal(b)
		},
	}
}

// serverConfig maps the server flags to a broker.Config.
func serverConfig(c *ucli.Context, logger hclog.Logger) (broker.Config, error) {
	voters, err := broker.ParseVoters(c.String("voters"))
	if err != nil {
		return broker.Config{}, err
	}
	cfg := broker.Config{
		NodeID:        int32(c.Int("node-id")),
		DataDir:       c.String("data-dir"),
		Listen:        c.String("listen"),
		Advertised:    c.String("advertised"),
		RaftListen:    c.String("raft-listen"),
		Voters:        voters,
		JoinAddrs:     c.StringSlice("join"),
		MetricsListen: c.String("metrics-listen"),
		Logger:        logger.Named(fmt.Sprintf("node-%d", c.Int("node-id"))),
	}
	if err := gatherProperties(c, &cfg); err != nil {
		return broker.Config{}, err
	}
	return cfg, nil
}

// shutdownGrace bounds a graceful shutdown.
const shutdownGrace = 30 * time.Second

// runUntilSignal waits for SIGINT or SIGTERM, then shuts the brokers down gracefully. A
// second signal exits at once.
func runUntilSignal(brokers ...*broker.Broker) error {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	<-sig
	sp := startStopProfile()
	defer sp.finish()
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	go func() {
		select {
		case <-sig:
			os.Exit(1)
		case <-ctx.Done():
		}
	}()
	var firstErr error
	for _, b := range brokers {
		if err := b.Shutdown(ctx); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}
