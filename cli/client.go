package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

// Every client command (topics, produce, consume, cluster, perf) is a plain Kafka client
// built on franz-go, so it works against Apache Kafka as well as Petrel.

const (
	// defaultBootstrap is the bootstrap server when neither the flag nor the environment
	// names one.
	defaultBootstrap = "127.0.0.1:9092"
	// defaultTimeout bounds every wait for the cluster.
	defaultTimeout = 10 * time.Second
)

// clientFlags are the flags every Kafka-client command takes.
func clientFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{
			Name:    "bootstrap-server",
			Aliases: []string{"b"}, // kcat's and rpk's -b
			Usage:   "Kafka bootstrap servers, host:port[,host:port...]",
			Value:   defaultBootstrap,
			EnvVars: []string{"PETREL_BOOTSTRAP_SERVER"},
		},
		&ucli.DurationFlag{
			Name:  "timeout",
			Usage: "how long to wait for the cluster to answer (connect, metadata, admin requests, record delivery)",
			Value: defaultTimeout,
		},
		commandConfigFlag(),
	}
}

// withClientFlags returns clientFlags followed by flags.
func withClientFlags(flags ...ucli.Flag) []ucli.Flag {
	return append(clientFlags(), flags...)
}

// withClientFlagsTimeout is withClientFlags with another --timeout default, for
// commands whose broker-side wait can outlast the usual 10 s.
func withClientFlagsTimeout(timeout time.Duration, flags ...ucli.Flag) []ucli.Flag {
	all := withClientFlags(flags...)
	for _, f := range all {
		if d, ok := f.(*ucli.DurationFlag); ok && d.Name == "timeout" {
			d.Value = timeout
		}
	}
	return all
}

// kafkaClient is a kgo client plus what a command needs to explain failures: the
// bootstrap servers, the timeout and the last connection error.
type kafkaClient struct {
	*kgo.Client
	bootstrap []string      // seed brokers as given
	timeout   time.Duration // --timeout
	dials     *dialTracker  // connection outcomes, for error messages
}

// newKafkaClient builds a client from the command's --bootstrap-server and --timeout
// flags, with extra options appended (producer or consumer settings). It does not
// connect: kgo connects on the first request.
func newKafkaClient(c *ucli.Context, opts ...kgo.Opt) (*kafkaClient, error) {
	seeds, err := parseBootstrap(c.String("bootstrap-server"))
	if err != nil {
		return nil, err
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", timeout)
	}
	dials := &dialTracker{}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("petrel-cli"),
		kgo.DialTimeout(min(timeout, 5*time.Second)),
		kgo.RetryTimeout(timeout),
		kgo.WithHooks(dials),
		kgo.WithLogger(newKgoLogger(newLogger(c).Named("client"))),
	}
	secure, err := securityOpts(c, min(timeout, 5*time.Second))
	if err != nil {
		return nil, err
	}
	base = append(base, secure...)
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &kafkaClient{Client: cl, bootstrap: seeds, timeout: timeout, dials: dials}, nil
}

// parseBootstrap splits a comma-separated server list and checks each is host:port.
func parseBootstrap(s string) ([]string, error) {
	var seeds []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(part); err != nil {
			return nil, fmt.Errorf("bad --bootstrap-server %q: want host:port", part)
		}
		seeds = append(seeds, part)
	}
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-server is empty")
	}
	return seeds, nil
}

// admin returns an admin client sharing this client's connections. Requests that
// carry a timeout (CreateTopics, DeleteTopics) ask the broker to answer within 80% of
// --timeout, so that its REQUEST_TIMED_OUT arrives before the client gives up.
func (k *kafkaClient) admin() *kadm.Client {
	adm := kadm.NewClient(k.Client)
	adm.SetTimeoutMillis(int32(max(k.timeout*8/10, time.Millisecond).Milliseconds()))
	return adm
}

// requestContext bounds one wait for the cluster by --timeout.
func (k *kafkaClient) requestContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, k.timeout)
}

// explain turns a client error into a one-line message a user can act on: a timeout
// before any broker answered names the bootstrap servers and the last dial error.
func (k *kafkaClient) explain(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, kgo.ErrClientClosed) || isDialError(err) {
		connected, last := k.dials.state()
		servers := strings.Join(k.bootstrap, ",")
		switch {
		case !connected && isDialError(err):
			return fmt.Errorf("cannot reach bootstrap server %s: %v", servers, err)
		case !connected && last != nil:
			return fmt.Errorf("cannot reach bootstrap server %s within %s: %v", servers, k.timeout, last)
		case !connected:
			return fmt.Errorf("cannot reach bootstrap server %s within %s", servers, k.timeout)
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("no answer from the cluster at %s within %s", servers, k.timeout)
		}
	}
	return err
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// kafkaError formats a Kafka error code with the broker's message, if any.
func kafkaError(err error, message string) error {
	if err == nil {
		return nil
	}
	if message == "" {
		return err
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Errorf("%s: %s", ke.Message, message)
	}
	return fmt.Errorf("%w: %s", err, message)
}

// dialTracker is a kgo hook that remembers whether any connection succeeded and the
// last dial error. kgo calls it from its own goroutines; mu guards the fields.
type dialTracker struct {
	mu        sync.Mutex
	connected bool  // some broker connection succeeded
	lastErr   error // the most recent failed connection attempt
}

var _ kgo.HookBrokerConnect = (*dialTracker)(nil)

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (d *dialTracker) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.lastErr = err
		return
	}
	d.connected = true
}

func (d *dialTracker) state() (connected bool, lastErr error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.connected, d.lastErr
}

// kgoLogger sends kgo's log lines to hclog. They show only at --log-level debug or
// trace: at other levels a client failure reaches the user once, as the command's error.
type kgoLogger struct {
	logger hclog.Logger
	level  kgo.LogLevel
}

func newKgoLogger(l hclog.Logger) kgo.Logger {
	level := kgo.LogLevelNone
	if l.IsTrace() || l.IsDebug() {
		level = kgo.LogLevelDebug
	}
	return kgoLogger{logger: l, level: level}
}

// Level implements kgo.Logger.
func (k kgoLogger) Level() kgo.LogLevel { return k.level }

// Log implements kgo.Logger.
func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	switch level {
	case kgo.LogLevelError:
		k.logger.Error(msg, keyvals...)
	case kgo.LogLevelWarn:
		k.logger.Warn(msg, keyvals...)
	case kgo.LogLevelInfo:
		k.logger.Info(msg, keyvals...)
	default:
		k.logger.Debug(msg, keyvals...)
	}
}

// signalContext is canceled on SIGINT or SIGTERM, so that long-running client commands
// (consume, produce from a terminal, perf) stop cleanly.
func signalContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

// lockedWriter serialises writes from several goroutines (progress lines, kgo's logger).
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lockErrWriter makes the app's error stream safe for concurrent writers and returns
// it. Call it before newKafkaClient so that the client's logger shares the lock.
func lockErrWriter(c *ucli.Context) io.Writer {
	if _, ok := c.App.ErrWriter.(*lockedWriter); !ok {
		c.App.ErrWriter = &lockedWriter{w: c.App.ErrWriter}
	}
	return c.App.ErrWriter
}
