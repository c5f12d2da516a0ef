package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

func devCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "dev",
		Usage: "run a throwaway local cluster with data in a temporary folder",
		Description: "Starts --nodes brokers in this process, all Raft voters, on consecutive ports:\n" +
			"Kafka on 9092, 9094, 9096, ... and Raft on the port after each;\n" +
			"/metrics, /healthz and /readyz on 9644, 9645, ... (--metrics-port, 0 for none).",
		Flags: append([]ucli.Flag{
			&ucli.IntFlag{Name: "nodes", Usage: "number of nodes", Value: 1},
			&ucli.IntFlag{Name: "port", Usage: "Kafka port of the first node", Value: 9092},
			&ucli.StringFlag{Name: "host", Usage: "address to listen on", Value: "127.0.0.1"},
			&ucli.BoolFlag{Name: "keep", Usage: "keep the data folder on exit"},
			&ucli.IntFlag{Name: "metrics-port", Usage: "metrics HTTP port of the first node (0: none)", Value: 9644},
		}, propertyFlags()...),
		Action: runDev,
	}
}

func runDev(c *ucli.Context) error {
	n := c.Int("nodes")
	if n < 1 || n > 32 {
		return fmt.Errorf("--nodes must be between 1 and 32, not %d", n)
	}
	var props broker.Config
	if err := gatherProperties(c, &props); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "petrel-dev-")
	if err != nil {
		return err
	}
	if !c.Bool("keep") {
		defer os.RemoveAll(dir)
	}
	host, port := c.String("host"), c.Int("port")
	kafkaAddr := func(i int) string { return fmt.Sprintf("%s:%d", host, port+2*i) }
	metricsAddr := func(i int) string {
		if c.Int("metrics-port") <= 0 {
			return ""
		}
		return fmt.Sprintf("%s:%d", host, c.Int("metrics-port")+i)
	}
	var voters []broker.Voter
	if n > 1 {
		for i := 0; i < n; i++ {
			voters = append(voters, broker.Voter{ID: int32(i), Addr: fmt.Sprintf("%s:%d", host, port+2*i+1)})
		}
	}
	logger := clientcmd.Logger(c)
	stop := notifyStop()
	defer signal.Stop(stop)
	var brokers []*broker.Broker
	shutdownAll := func() {
		for _, b := range brokers {
			b.Shutdown(context.Background())
		}
	}
	for i := 0; i < n; i++ {
		b, err := broker.Start(broker.Config{
			NodeID:          int32(i),
			DataDir:         filepath.Join(dir, fmt.Sprint(i)),
			Listen:          kafkaAddr(i),
			RaftListen:      fmt.Sprintf("%s:%d", host, port+2*i+1),
			Voters:          voters,
			Properties:      props.Properties,
			PropertySources: props.PropertySources,
			StrictConfig:    props.StrictConfig,
			Logger:          logger.Named(fmt.Sprintf("node-%d", i)),
			MetricsListen:   metricsAddr(i),
		})
		if err != nil {
			shutdownAll()
			return err
		}
		brokers = append(brokers, b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, b := range brokers {
		if err := b.WaitReady(ctx); err != nil {
			shutdownAll()
			return err
		}
	}
	bootstrap := kafkaAddr(0)
	for i := 1; i < n; i++ {
		bootstrap += "," + kafkaAddr(i)
	}
	fmt.Fprintf(c.App.Writer, "petrel dev: %d node(s), bootstrap %s (data in %s; Ctrl-C stops)\n", n, bootstrap, dir)
	fmt.Fprintf(c.App.Writer, "  try: kcat -b %s -L\n", kafkaAddr(0))
	if addr := metricsAddr(0); addr != "" {
		fmt.Fprintf(c.App.Writer, "  metrics: http://%s/metrics (petrel top --metrics %s)\n", addr, addr)
	}
	return runUntilSignal(stop, brokers...)
}
