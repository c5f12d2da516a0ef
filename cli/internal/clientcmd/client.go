// Package clientcmd is what petrel's Kafka-client commands (topics, produce, consume,
// groups, perf, ...) share: the connection flags (--bootstrap-server, --timeout,
// --command-config) and the kgo client built from them, positional arguments with
// Kafka's trailing flags, --log-level and --log-format and the logger they make,
// interrupts, and the topic check and producer settings of the commands that produce.
// The user commands (package cli) and the perf tooling (cli/perf) both build on it, so
// that a flag or an error message is worded once. Every client command is a plain Kafka
// client built on franz-go, so it works against Apache Kafka as well as Petrel.
package clientcmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	ucli "github.com/urfave/cli/v2"
)

const (
	// defaultBootstrap is the bootstrap server when neither the flag nor the environment
	// names one.
	defaultBootstrap = "127.0.0.1:9092"
	// defaultTimeout bounds every wait for the cluster.
	defaultTimeout = 10 * time.Second
)

// Flags are the flags every Kafka-client command takes.
func Flags() []ucli.Flag {
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

// WithFlags returns Flags followed by flags.
func WithFlags(flags ...ucli.Flag) []ucli.Flag {
	return append(Flags(), flags...)
}

// WithFlagsTimeout is WithFlags with another --timeout default, for
// commands whose broker-side wait can outlast the usual 10 s.
func WithFlagsTimeout(timeout time.Duration, flags ...ucli.Flag) []ucli.Flag {
	all := WithFlags(flags...)
	for _, f := range all {
		if d, ok := f.(*ucli.DurationFlag); ok && d.Name == "timeout" {
			d.Value = timeout
		}
	}
	return all
}

// Client is a kgo client plus what a command needs to explain failures: the
// bootstrap servers, the timeout and the last connection error.
type Client struct {
	*kgo.Client
	bootstrap []string      // seed brokers as given
	timeout   time.Duration // --timeout
	dials     *dialTracker  // connection outcomes, for error messages
}

// NewClient builds a client from the command's --bootstrap-server, --timeout and
// --command-config flags, with extra options appended (producer or consumer settings).
// It does not connect: kgo connects on the first request.
func NewClient(c *ucli.Context, opts ...kgo.Opt) (*Client, error) {
	base, err := BaseOptions(c)
	if err != nil {
		return nil, err
	}
	seeds, _ := parseBootstrap(c.String("bootstrap-server")) // checked by BaseOptions
	dials := &dialTracker{}
	base = append(base, kgo.WithHooks(dials))
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return &Client{Client: cl, bootstrap: seeds, timeout: c.Duration("timeout"), dials: dials}, nil
}

// BaseOptions are the kgo options of every client a command builds from its
// --bootstrap-server, --timeout and --command-config flags: seeds, client id, dial and
// retry timeouts, the logger, TLS and SASL. A command that runs many clients (verify
// workload) builds each from them.
func BaseOptions(c *ucli.Context) ([]kgo.Opt, error) {
	seeds, err := parseBootstrap(c.String("bootstrap-server"))
	if err != nil {
		return nil, err
	}
	timeout := c.Duration("timeout")
	if timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", timeout)
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("petrel-cli"),
		kgo.DialTimeout(min(timeout, 5*time.Second)),
		kgo.RetryTimeout(timeout),
		kgo.WithLogger(newKgoLogger(Logger(c).Named("client"))),
	}
	secure, err := securityOpts(c, min(timeout, 5*time.Second))
	if err != nil {
		return nil, err
	}
	return append(base, secure...), nil
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

// Connect is NewClient for a command that sends its requests and ends: ctx is bounded
// by --timeout, and done ends it and closes the client.
func Connect(c *ucli.Context, opts ...kgo.Opt) (cl *Client, ctx context.Context, done func(), err error) {
	cl, err = NewClient(c, opts...)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := cl.RequestContext(c.Context)
	return cl, ctx, func() {
		cancel()
		cl.Close()
	}, nil
}

// Timeout is --timeout: how long one wait for the cluster may take.
func (k *Client) Timeout() time.Duration { return k.timeout }

// Admin returns an admin client sharing this client's connections. Requests that
// carry a timeout (CreateTopics, DeleteTopics) ask the broker to answer within 80% of
// --timeout, so that its REQUEST_TIMED_OUT arrives before the client gives up.
func (k *Client) Admin() *kadm.Client {
	adm := kadm.NewClient(k.Client)
	adm.SetTimeoutMillis(int32(max(k.timeout*8/10, time.Millisecond).Milliseconds()))
	return adm
}

// RequestContext bounds one wait for the cluster by --timeout.
func (k *Client) RequestContext(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, k.timeout)
}

// Explain turns a client error into a one-line message a user can act on: a timeout
// before any broker answered names the bootstrap servers and the last dial error.
func (k *Client) Explain(err error) error {
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
