package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/petrel-broker/petrel/cli/workload"
	"github.com/schollz/progressbar/v3"
	ucli "github.com/urfave/cli/v2"
)

// verifyWorkloadCommand is `petrel verify workload`: the checker of cli/workload
// against any Kafka cluster, its fault hook a shell command.
func verifyWorkloadCommand() *ucli.Command {
	flags := clientcmd.WithFlags(
		&ucli.StringFlag{Name: "topic", Usage: "the topic to write and read (created when missing)", Value: "petrel-verify"},
		&ucli.IntFlag{Name: "partitions", Usage: "partitions of the topic when it is created", Value: 6},
		&ucli.IntFlag{Name: "replication-factor", Usage: "replication factor of the topic when it is created (-1: the cluster's default)", Value: -1},
		&ucli.IntFlag{Name: "producers", Usage: "idempotent acks=all producers", Value: 4},
		&ucli.IntFlag{Name: "keys", Usage: "distinct record keys", Value: 64},
		&ucli.Int64Flag{Name: "records", Usage: fmt.Sprintf("records to produce in all (0: until --duration; at most %d)", workload.MaxRecords)},
		&ucli.DurationFlag{Name: "duration", Usage: "how long to produce (0: until --records); the run ends at whichever comes first", Value: 30 * time.Second},
		&ucli.Float64Flag{Name: "rate", Usage: "records per second over all producers (0: as fast as they are acknowledged)"},
		&ucli.BoolFlag{Name: "transactions", Usage: "produce in transactions, some aborted on purpose; consumers read_committed"},
		&ucli.Float64Flag{Name: "abort-fraction", Usage: "with --transactions: the fraction of transactions aborted on purpose", Value: 0.2},
		&ucli.IntFlag{Name: "transaction-records", Usage: "with --transactions: records per transaction", Value: 10},
		&ucli.IntFlag{Name: "consumers", Usage: "consumers in the group, committing their offsets", Value: 2},
		&ucli.StringFlag{Name: "group", Usage: "the consumer group (default: petrel-verify-RUN)"},
		&ucli.StringFlag{Name: "fault-cmd", Usage: "a shell command run at each --fault-at moment (sh -c); its output is shown"},
		&ucli.StringFlag{Name: "fault-at", Usage: "when --fault-cmd runs: percentages of the run and durations after its start, e.g. 30%,60% or 10s,20s", Value: "50%"},
		&ucli.DurationFlag{Name: "fault-timeout", Usage: "how long one --fault-cmd may run", Value: 2 * time.Minute},
		&ucli.DurationFlag{Name: "delivery-timeout", Usage: "how long a record's delivery or a transaction's end may take before it counts as unacknowledged", Value: 30 * time.Second},
		&ucli.DurationFlag{Name: "drain-timeout", Usage: "how long the final read of every partition may take", Value: time.Minute},
		&ucli.Uint64Flag{Name: "seed", Usage: "seed of the producers' key choices and aborts (0: random)"},
		&ucli.BoolFlag{Name: "no-progress", Usage: "no progress bar on stderr"},
	)
	for _, f := range flags {
		if s, ok := f.(*ucli.StringFlag); ok && s.Name == "bootstrap-server" {
			s.Aliases = append(s.Aliases, "brokers")
		}
	}
	return &ucli.Command{
		Name:  "workload",
		Usage: "run producers, a consumer group and faults against any Kafka cluster; report lost, duplicated, reordered and aborted records",
		Description: "Exits 0 when no check found a violation, 1 on any violation, error or interrupt.\n" +
			"What each check proves and what it cannot: docs/verify.md.",
		Flags:  flags,
		Action: runVerifyWorkload,
	}
}

func runVerifyWorkload(c *ucli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("verify workload takes no arguments, got %q", c.Args().First())
	}
	stderr := clientcmd.LockErrWriter(c)
	base, err := clientcmd.BaseOptions(c)
	if err != nil {
		return err
	}
	cfg := workload.Config{
		ClientOpts:         base,
		Topic:              c.String("topic"),
		Partitions:         int32(c.Int("partitions")),
		ReplicationFactor:  int16(c.Int("replication-factor")),
		Producers:          c.Int("producers"),
		Keys:               c.Int("keys"),
		Records:            c.Int64("records"),
		Duration:           c.Duration("duration"),
		Rate:               c.Float64("rate"),
		Transactions:       c.Bool("transactions"),
		AbortFraction:      c.Float64("abort-fraction"),
		TransactionRecords: c.Int("transaction-records"),
		Consumers:          c.Int("consumers"),
		Group:              c.String("group"),
		DeliveryTimeout:    c.Duration("delivery-timeout"),
		DrainTimeout:       c.Duration("drain-timeout"),
		Seed:               c.Uint64("seed"),
		Logger:             clientcmd.Logger(c).Named("verify"),
	}
	if c.Int("replication-factor") > 32767 || c.Int("partitions") > 1<<20 {
		return errors.New("--partitions or --replication-factor out of range")
	}
	if cmd := c.String("fault-cmd"); cmd != "" {
		if cfg.Faults, err = workload.ParseFaultPoints(c.String("fault-at")); err != nil {
			return fmt.Errorf("--fault-at: %w", err)
		}
		if c.Duration("fault-timeout") <= 0 {
			return errors.New("--fault-timeout must be positive")
		}
		cfg.Fault = shellFault(cmd, cfg.Topic, c.Duration("fault-timeout"))
	} else if c.IsSet("fault-at") {
		return errors.New("--fault-at needs --fault-cmd")
	}
	if err := cfg.Validate(); err != nil {
		return flagWords(err)
	}

	fmt.Fprintf(stderr, "run %s: %d producers on topic %s, %d consumers in group %s\n", cfg.Run, cfg.Producers, cfg.Topic, cfg.Consumers, cfg.Group)
	bar := newWorkloadBar(stderr, !c.Bool("no-progress"))
	cfg.OnProgress = bar.progress
	cfg.OnFault = bar.fault
	cfg.OnWarning = func(msg string) { fmt.Fprintf(stderr, "warning: %s\n", msg) }

	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second interrupt ends the process at once
	}()
	report, err := workload.Run(ctx, cfg)
	bar.finish()
	if err != nil {
		return flagWords(err)
	}
	if err := report.WriteTable(c.App.Writer); err != nil {
		return err
	}
	switch n := report.Violations(); {
	case n > 0:
		return fmt.Errorf("%d violations found (run %s)", n, report.Run)
	case report.Interrupted:
		return errors.New("interrupted: the report covers a partial run")
	case report.Unchecked > 0:
		return fmt.Errorf("the drain did not finish: %d acknowledged records were not checked", report.Unchecked)
	}
	return nil
}

// flagWords words a Config error in the flags' names.
func flagWords(err error) error {
	msg := err.Error()
	for _, r := range []struct{ from, to string }{
		{"records per transaction", "--transaction-records"},
		{"abort fraction", "--abort-fraction"},
		{"replication factor", "--replication-factor"},
		{"give a number of records, a duration or both", "give --records, --duration or both"},
		{"give a new group", "give a new --group"},
	} {
		msg = strings.Replace(msg, r.from, r.to, 1)
	}
	for _, w := range []string{"producers", "keys", "consumers", "records", "duration", "rate", "partitions"} {
		if strings.HasPrefix(msg, w+" ") {
			msg = "--" + msg
		}
	}
	if strings.HasPrefix(msg, "fault moment") {
		msg = "--fault-at: " + msg
	}
	return errors.New(msg)
}

// maxFaultOutput bounds the output of --fault-cmd kept and shown.
const maxFaultOutput = 64 << 10

// shellFault runs cmd with sh -c, bounded by timeout, with PETREL_VERIFY_FAULT (1, 2,
// ...) and PETREL_VERIFY_TOPIC in its environment; it returns the combined output.
// A process the command leaves running (a restarted broker) may keep the output pipe
// open: the wait ends WaitDelay after the shell exits. The shell runs in a process group
// of its own, killed as a whole on the timeout or an interrupt, so that what it started
// (a sleep, a restart in progress) does not outlive it; a server meant to outlive the
// command must be started with setsid.
func shellFault(cmd, topic string, timeout time.Duration) func(context.Context, int) (string, error) {
	return func(ctx context.Context, n int) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		sh := exec.CommandContext(ctx, "sh", "-c", cmd)
		sh.Env = append(os.Environ(), fmt.Sprintf("PETREL_VERIFY_FAULT=%d", n), "PETREL_VERIFY_TOPIC="+topic)
		out := &cappedBuffer{max: maxFaultOutput}
		sh.Stdout, sh.Stderr = out, out
		sh.WaitDelay = 2 * time.Second
		sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		sh.Cancel = func() error { return syscall.Kill(-sh.Process.Pid, syscall.SIGKILL) }
		err := sh.Run()
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil // the shell exited; something it started still holds the output
		}
		if ctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("--fault-cmd did not finish within %s", timeout)
		}
		return out.String(), err
	}
}

// cappedBuffer keeps the first max bytes written to it.
type cappedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room < len(p) {
		b.buf.Write(p[:max(room, 0)])
		b.dropped = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dropped {
		return b.buf.String() + "\n[output cut]\n"
	}
	return b.buf.String()
}

// workloadBar is the progress on stderr and the faults' output: a bar on a terminal,
// otherwise (a log file, CI) one plain line every plainProgressEvery. Run calls it from
// one goroutine.
type workloadBar struct {
	w   io.Writer
	bar *progressbar.ProgressBar // nil with --no-progress or off a terminal
	// plain is set when progress goes to a file as lines; lastLine is when the last went.
	plain    bool
	lastLine time.Time
	last     string // the latest progress line, printed by finish
}

// plainProgressEvery is how often progress is printed as a line off a terminal.
const plainProgressEvery = 5 * time.Second

func newWorkloadBar(w io.Writer, show bool) *workloadBar {
	b := &workloadBar{w: w}
	if show && !isTerminal(w) {
		b.plain = true
		return b
	}
	if show {
		b.bar = progressbar.NewOptions64(1000,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowDescriptionAtLineEnd(),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	return b
}

func (b *workloadBar) progress(p workload.Progress) {
	if b.bar == nil && !b.plain {
		return
	}
	desc := fmt.Sprintf("%s: sent %d, acked %d, failed %d", p.Phase, p.Sent, p.Acked, p.Failed)
	if p.Aborted > 0 {
		desc += fmt.Sprintf(", aborted %d", p.Aborted)
	}
	desc += fmt.Sprintf(", group read %d", p.Read)
	if b.plain {
		b.last = fmt.Sprintf("%3.0f%% %s\n", p.Fraction*100, desc)
		if now := time.Now(); now.Sub(b.lastLine) >= plainProgressEvery {
			b.lastLine = now
			io.WriteString(b.w, b.last)
			b.last = ""
		}
		return
	}
	b.bar.Describe(desc)
	_ = b.bar.Set64(int64(p.Fraction * 1000))
}

func (b *workloadBar) fault(f workload.FaultResult) {
	if b.bar != nil {
		_ = b.bar.Clear()
	}
	status := "ok"
	if f.Err != nil {
		status = f.Err.Error()
	}
	fmt.Fprintf(b.w, "fault %d (due at %s) ran at %s for %s: %s\n", f.N, f.Point, f.At.Round(100*time.Millisecond), f.Took.Round(100*time.Millisecond), status)
	if out := strings.TrimRight(f.Output, "\n"); out != "" {
		for _, line := range strings.Split(out, "\n") {
			fmt.Fprintf(b.w, "  | %s\n", line)
		}
	}
}

func (b *workloadBar) finish() {
	if b.plain && b.last != "" {
		io.WriteString(b.w, b.last)
	}
	if b.bar != nil {
		_ = b.bar.Finish()
		fmt.Fprintln(b.w)
	}
}
