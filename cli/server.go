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
	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/petrel-broker/petrel/config"
	ucli "github.com/urfave/cli/v2"
)

func serverFlags() []ucli.Flag {
	flags := []ucli.Flag{
		&ucli.IntFlag{Name: "node-id", Usage: "this node's id (Kafka node.id)", Value: 0},
		&ucli.StringFlag{Name: "data-dir", Usage: "where the node keeps raft/ and logs/", Required: true},
		&ucli.StringFlag{Name: "listen", Usage: "Kafka listener host:port, the shorthand for listeners=PLAINTEXT://host:port (default " + config.DefaultListen + ")"},
		&ucli.StringFlag{Name: "advertised", Usage: "address put in metadata responses for the first listener (default: the listener's)"},
		&ucli.StringFlag{Name: "raft-listen", Usage: "Raft transport host:port (default: the controller.listener.names listener, else " + config.DefaultRaftListen + ")"},
		&ucli.StringFlag{Name: "voters", Usage: "initial Raft voters, id@host:port,... (default: this node alone)"},
		&ucli.StringSliceFlag{Name: "join", Usage: "Kafka address of a cluster member to ask for membership, for a node not in --voters (repeatable)"},
		&ucli.StringFlag{Name: "metrics-listen", Usage: fmt.Sprintf("HTTP host:port of /metrics, /healthz and /readyz (\"\" for none; default 127.0.0.1:%d + node id)", defaultMetricsPort)},
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
			cfg, err := serverConfig(c, clientcmd.Logger(c))
			if err != nil {
				return err
			}
			if c.Bool("print-config") {
				return printConfig(c, cfg)
			}
			stop := notifyStop() // before Start: a SIGTERM while replicas recover still stops cleanly
			defer signal.Stop(stop)
			b, err := broker.Start(cfg)
			if err != nil {
				return err
			}
			metrics := "none"
			if a := b.MetricsAddr(); a != nil {
				metrics = a.String()
			}
			fmt.Fprintf(c.App.Writer, "petrel node %d listening on %s (raft %s, metrics %s)\n", cfg.NodeID, b.Addr(), b.RaftAddr(), metrics)
			return runUntilSignal(stop, b)
		},
	}
}

// serverConfig maps the server flags to a broker.Config: the listener flags by the one
// listener rule (broker.ApplyListenerFlags), the metrics listener derived from the node
// id when not given.
func serverConfig(c *ucli.Context, logger hclog.Logger) (broker.Config, error) {
	voters, err := broker.ParseVoters(c.String("voters"))
	if err != nil {
		return broker.Config{}, err
	}
	cfg := broker.Config{
		NodeID:    int32(c.Int("node-id")),
		DataDir:   c.String("data-dir"),
		Voters:    voters,
		JoinAddrs: c.StringSlice("join"),
		Logger:    logger.Named(fmt.Sprintf("node-%d", c.Int("node-id"))),
	}
	if err := gatherProperties(c, &cfg); err != nil {
		return broker.Config{}, err
	}
	given := func(name string) string {
		if !c.IsSet(name) {
			return ""
		}
		return c.String(name)
	}
	flags := config.ListenerFlags{Listen: given("listen"), Advertised: c.String("advertised"), RaftListen: given("raft-listen")}
	for name, v := range map[string]string{"listen": flags.Listen, "raft-listen": flags.RaftListen} {
		if c.IsSet(name) && v == "" {
			return broker.Config{}, fmt.Errorf("--%s needs host:port", name)
		}
	}
	if err := cfg.ApplyListenerFlags(flags); err != nil {
		return broker.Config{}, err
	}
	if cfg.MetricsListen, err = metricsListen(c, cfg.NodeID); err != nil {
		return broker.Config{}, err
	}
	return cfg, nil
}

// metricsListen is --metrics-listen, or 127.0.0.1 on port 9644 + node id (petrel dev's
// layout), so that nodes on one host never share a port.
func metricsListen(c *ucli.Context, nodeID int32) (string, error) {
	if c.IsSet("metrics-listen") {
		return c.String("metrics-listen"), nil
	}
	port := defaultMetricsPort + int64(nodeID)
	if port > 65535 {
		return "", fmt.Errorf("the default metrics port 9644 + node id %d is past 65535: give --metrics-listen host:port (\"\" for none)", nodeID)
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// shutdownGrace bounds a graceful shutdown.
const shutdownGrace = 30 * time.Second

// notifyStop returns the channel SIGINT and SIGTERM arrive on from now on; the caller
// stops it (signal.Stop) when done. Taken before the brokers start, so a signal during
// a long start (log recovery) waits for it and then stops them gracefully instead of
// killing the process.
func notifyStop() chan os.Signal {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	return sig
}

// runUntilSignal waits for a signal on sig (notifyStop), then shuts the brokers down
// gracefully. A second signal exits at once.
func runUntilSignal(sig chan os.Signal, brokers ...*broker.Broker) error {
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
