package workload

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Phase names what a run is doing, for progress.
type Phase string

// The phases of a run, in order.
const (
	PhaseProducing Phase = "producing"
	PhaseStopping  Phase = "stopping"
	PhaseSettling  Phase = "settling"
	PhaseDraining  Phase = "draining"
)

// Progress is a run's state, for a progress bar.
type Progress struct {
	Phase    Phase
	Elapsed  time.Duration // since the producers started
	Fraction float64       // of the producing phase done, 0 to 1
	Sent     int64         // records produced so far
	Acked    int64         // acknowledged (committed, with transactions)
	Failed   int64         // produce or commit failed
	Aborted  int64         // in transactions aborted
	Read     int64         // records the group's consumers returned
	Commits  int64         // offset commits the consumers made
	Faults   int           // faults done
}

// FaultResult is one run of the fault hook.
type FaultResult struct {
	N      int           // 1, 2, ... in Config.Faults order
	Point  FaultPoint    // when it was due
	At     time.Duration // when it started, since the producers started
	Took   time.Duration
	Output string
	Err    error
}

// Report is a run's outcome: the analysis and what the run did.
type Report struct {
	Analysis
	Run, Topic, Group string
	Partitions        int
	Producers         int
	Consumers         int
	Transactions      bool
	Elapsed           time.Duration // the producing phase
	Faults            []FaultResult
	FaultsSkipped     int             // fault moments the run ended before
	Interrupted       bool            // ctx was canceled: a partial run
	Unfinished        map[int32]int64 // partitions the drain did not finish, and where it stopped
	Settled           bool            // the group's committed offsets reached the end offsets
	Notes             []string        // errors met along the way (clients, commits)
}

// runner holds one run's shared state. The counters are atomic; each producer and
// consumer keeps its own history, collected once it has stopped.
type runner struct {
	cfg        Config
	partitions int

	budget atomic.Int64 // records left to produce

	sent, acked, failed, aborted atomic.Int64
	groupRead, commits           atomic.Int64

	notesMu sync.Mutex
	notes   []string // guarded by notesMu; bounded by maxNotes
}

// maxNotes bounds the notes a run keeps.
const maxNotes = 20

func (r *runner) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.cfg.Logger.Debug(msg)
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	if len(r.notes) < maxNotes {
		r.notes = append(r.notes, msg)
	}
}

// take reserves one record of the budget.
func (r *runner) take() bool {
	if r.budget.Add(-1) < 0 {
		r.budget.Add(1)
		return false
	}
	return true
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Run runs the workload described by cfg and judges it. It returns an error only when
// the run could not start (bad config, no cluster, topic not creatable); violations are
// in the Report. Canceling ctx ends the producing phase early: the run still drains
// (bounded by DrainTimeout) and reports on what it produced, marked Interrupted.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg}
	budget := cfg.Records
	if budget == 0 {
		budget = MaxRecords
	}
	r.budget.Store(budget)

	admin, err := kgo.NewClient(cfg.ClientOpts...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	if r.partitions, err = r.ensureTopic(ctx, adm); err != nil {
		return nil, err
	}
	if cfg.Consumers > 0 {
		if err := r.checkGroup(ctx, adm); err != nil {
			return nil, err
		}
	}
	r.warnTopicConfig(ctx, adm)

	consumers := make([]*consumer, cfg.Consumers)
	var consumersDone sync.WaitGroup
	stopConsumers := make(chan struct{})
	for i := range consumers {
		consumers[i] = &consumer{r: r, n: i}
		consumersDone.Go(func() { consumers[i].run(stopConsumers) })
	}
	w := &watcher{r: r, adm: adm}
	stopWatch := make(chan struct{})
	var watchDone sync.WaitGroup
	if cfg.Consumers > 0 {
		watchDone.Go(func() { w.run(stopWatch) })
	}

	producers := make([]*producer, cfg.Producers)
	stopProducers := make(chan struct{})
	producersDone := make(chan struct{})
	var producing sync.WaitGroup
	start := time.Now()
	for i := range producers {
		producers[i] = newProducer(r, int32(i))
		producing.Go(func() { producers[i].run(ctx, stopProducers) })
	}
	go func() {
		producing.Wait()
		close(producersDone)
	}()

	report := &Report{Run: cfg.Run, Topic: cfg.Topic, Group: cfg.Group, Partitions: r.partitions,
		Producers: cfg.Producers, Consumers: cfg.Consumers, Transactions: cfg.Transactions}
	f := &faults{r: r, start: start}
	report.Interrupted = r.control(ctx, start, f, producersDone)
	report.Elapsed = time.Since(start)
	close(stopProducers)
	r.progress(PhaseStopping, start)
	<-producersDone
	report.Faults, report.FaultsSkipped = f.finish(r)
	var h History
	if cfg.Consumers > 0 && !report.Interrupted {
		r.progress(PhaseSettling, start)
		settleCtx, cancel := context.WithTimeout(ctx, cfg.DrainTimeout)
		h.Settled = r.settle(settleCtx, adm)
		cancel()
	}
	report.Settled = h.Settled
	close(stopConsumers)
	consumersDone.Wait()
	close(stopWatch)
	watchDone.Wait()

	r.progress(PhaseDraining, start)
	answersDue := time.Now().Add(cfg.DeliveryTimeout)
	for _, p := range producers {
		h.Produced = append(h.Produced, p.history(answersDue)...)
	}
	for _, c := range consumers {
		h.GroupReads = append(h.GroupReads, c.reads...)
		h.Commits = append(h.Commits, c.commits...)
	}
	h.Commits = append(h.Commits, w.observed...)
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.DrainTimeout)
	defer cancel()
	h.Drained, h.Unfinished, h.Ends = r.drain(drainCtx, adm)
	report.Unfinished = h.Unfinished
	report.Analysis = Analyze(&h)
	r.notesMu.Lock()
	report.Notes = r.notes
	r.notesMu.Unlock()
	return report, nil
}

// control runs the producing phase until the budget is produced, the duration is over
// or ctx is canceled (interrupted): it starts faults when due and reports progress.
func (r *runner) control(ctx context.Context, start time.Time, f *faults, producersDone <-chan struct{}) (interrupted bool) {
	tick := time.NewTicker(min(r.cfg.ProgressInterval, 100*time.Millisecond))
	defer tick.Stop()
	var end <-chan time.Time
	if r.cfg.Duration > 0 {
		t := time.NewTimer(r.cfg.Duration)
		defer t.Stop()
		end = t.C
	}
	lastProgress := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return true
		case <-end:
			return false
		case <-producersDone:
			return false
		case res := <-f.results:
			f.done(res)
		case <-tick.C:
		}
		fraction := r.fraction(start)
		f.startDue(ctx, fraction, time.Since(start))
		if time.Since(lastProgress) >= r.cfg.ProgressInterval {
			lastProgress = time.Now()
			r.progress(PhaseProducing, start)
		}
	}
}

// fraction is how much of the producing phase is done: of the records or of the
// duration, whichever is further.
func (r *runner) fraction(start time.Time) float64 {
	var f float64
	if r.cfg.Records > 0 {
		f = float64(r.sent.Load()) / float64(r.cfg.Records)
	}
	if r.cfg.Duration > 0 {
		f = max(f, float64(time.Since(start))/float64(r.cfg.Duration))
	}
	return min(f, 1)
}

func (r *runner) progress(phase Phase, start time.Time) {
	if r.cfg.OnProgress == nil {
		return
	}
	r.cfg.OnProgress(Progress{
		Phase: phase, Elapsed: time.Since(start), Fraction: r.fraction(start),
		Sent: r.sent.Load(), Acked: r.acked.Load(), Failed: r.failed.Load(), Aborted: r.aborted.Load(),
		Read: r.groupRead.Load(), Commits: r.commits.Load(),
	})
}

// ensureTopic creates the topic unless it exists and waits until every partition has a
// leader; it returns the number of partitions.
func (r *runner) ensureTopic(ctx context.Context, adm *kadm.Client) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DeliveryTimeout)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, r.cfg.Partitions, r.cfg.ReplicationFactor, nil, r.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %q: %w", r.cfg.Topic, err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		md, err := adm.Metadata(ctx, r.cfg.Topic)
		if err == nil {
			t, ok := md.Topics[r.cfg.Topic]
			if ok && t.Err == nil && len(t.Partitions) > 0 && allLed(t) {
				return len(t.Partitions), nil
			}
			if ok && t.Err != nil {
				err = t.Err
			} else {
				err = errors.New("partitions without a leader")
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("topic %q not ready within %s: %w", r.cfg.Topic, r.cfg.DeliveryTimeout, err)
		case <-tick.C:
		}
	}
}

func allLed(t kadm.TopicDetail) bool {
	for _, p := range t.Partitions {
		if p.Leader < 0 || p.Err != nil {
			return false
		}
	}
	return true
}

// settle lets the group's consumers read to the end: it waits until the group's
// committed offsets reach every partition's end offset, or ctx ends (a note, not a
// violation: the group's commits are judged as they are). It reports whether they did.
func (r *runner) settle(ctx context.Context, adm *kadm.Client) bool {
	ends := r.listOffsets(ctx, "settle: listing end offsets", adm.ListEndOffsets)
	if len(ends) < r.partitions {
		return false
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	behind := len(ends)
	for {
		committed, err := adm.FetchOffsets(ctx, r.cfg.Group)
		if err == nil {
			behind = 0
			for p, end := range ends {
				if c, ok := committed.Lookup(r.cfg.Topic, p); end > 0 && (!ok || c.Err != nil || c.At < end) {
					behind++
				}
			}
			if behind == 0 {
				return true
			}
		}
		select {
		case <-ctx.Done():
			r.note("the group's committed offsets did not reach the end of %d partitions within %s", behind, r.cfg.DrainTimeout)
			return false
		case <-tick.C:
		}
	}
}
