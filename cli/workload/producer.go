package workload

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// producer is one idempotent acks=all producer and the history of what it produced.
type producer struct {
	r    *runner
	n    int32
	rng  *rand.Rand // key choices and abort decisions; the producer's goroutine only
	next []int32    // next sequence per key; the producer's goroutine only

	mu      sync.Mutex
	records []Produced // guarded by mu: kgo's callbacks fill in offsets and statuses
	// pending counts the produce callbacks not yet called (guarded by mu); answeredAll
	// is signalled when it falls to 0.
	pending     int
	answeredAll *sync.Cond
}

func newProducer(r *runner, n int32) *producer {
	seed := r.cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	p := &producer{r: r, n: n, rng: rand.New(rand.NewPCG(seed, uint64(n))), next: make([]int32, r.cfg.Keys)}
	p.answeredAll = sync.NewCond(&p.mu)
	return p
}

// history waits, until deadline, for kgo's last produce callbacks, which may still come
// after the client is closed, and returns a copy of the records.
func (p *producer) history(deadline time.Time) []Produced {
	timer := time.AfterFunc(time.Until(deadline), func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.answeredAll.Broadcast()
	})
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.pending > 0 && time.Now().Before(deadline) {
		p.answeredAll.Wait()
	}
	if p.pending > 0 {
		p.r.note("producer %d: %d produce answers missing after the client closed", p.n, p.pending)
	}
	return slices.Clone(p.records)
}

// client makes the producer's Kafka client: acks=all and idempotent (kgo's defaults,
// set anyway), transactional with a transactional id of the run and producer.
func (p *producer) client() (*kgo.Client, error) {
	opts := append(p.r.cfg.ClientOpts[:len(p.r.cfg.ClientOpts):len(p.r.cfg.ClientOpts)],
		kgo.DefaultProduceTopic(p.r.cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(p.r.cfg.DeliveryTimeout),
		kgo.ProduceRequestTimeout(min(p.r.cfg.DeliveryTimeout, 10*time.Second)),
		kgo.MaxBufferedRecords(1000),
		kgo.UnknownTopicRetries(-1), // a restarting cluster may not know the topic for a moment
	)
	if p.r.cfg.Transactions {
		opts = append(opts,
			kgo.TransactionalID(fmt.Sprintf("petrel-verify-%s-%d", p.r.cfg.Run, p.n)),
			kgo.TransactionTimeout(max(p.r.cfg.DeliveryTimeout, 10*time.Second)),
		)
	}
	return kgo.NewClient(opts...)
}

// nextRecord reserves one record of the budget (pacing to the rate) and adds it to the
// history; ok is false when the producer must stop.
func (p *producer) nextRecord(stop <-chan struct{}, pace *pacer, txn int32, intent byte) (i int, rec *kgo.Record, ok bool) {
	select {
	case <-stop:
		return 0, nil, false
	default:
	}
	if !pace.wait(stop) || !p.r.take() {
		return 0, nil, false
	}
	key := int32(p.rng.IntN(len(p.next)))
	id := RecordID{Producer: p.n, Key: key, Seq: p.next[key]}
	p.next[key]++
	p.mu.Lock()
	p.records = append(p.records, Produced{RecordID: id, Txn: txn, Status: Unacknowledged, Partition: -1, Offset: -1})
	i = len(p.records) - 1
	p.pending++ // the caller produces the record
	p.mu.Unlock()
	p.r.sent.Add(1)
	return i, &kgo.Record{Key: recordKey(key), Value: encodeValue(p.r.cfg.Run, id, txn, intent)}, true
}

// answered records a produce answer: where the record went, and (outside transactions)
// whether it was acknowledged.
func (p *producer) answered(i int, rec *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending--; p.pending == 0 {
		p.answeredAll.Broadcast()
	}
	pr := &p.records[i]
	if err == nil {
		pr.Partition, pr.Offset = rec.Partition, rec.Offset
	}
	if p.r.cfg.Transactions {
		return
	}
	if err == nil {
		pr.Status = Acknowledged
		p.r.acked.Add(1)
	} else {
		p.r.failed.Add(1)
	}
}

// ended sets the status of a transaction's records; failed: aborted because a produce
// failed.
func (p *producer) ended(idx []int, s Status, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, i := range idx {
		p.records[i].Status = s
		p.records[i].Failed = failed && s == Aborted
	}
	switch s {
	case Acknowledged:
		p.r.acked.Add(int64(len(idx)))
	case Aborted:
		p.r.aborted.Add(int64(len(idx)))
	default:
		p.r.failed.Add(int64(len(idx)))
	}
}

// run produces until stop is closed or the budget is spent, then delivers what is
// buffered (bounded by the delivery timeout) and closes its client.
func (p *producer) run(ctx context.Context, stop <-chan struct{}) {
	pace := newPacer(p.r.cfg)
	if p.r.cfg.Transactions {
		p.runTransactions(ctx, stop, pace)
		return
	}
	cl, err := p.client()
	if err != nil {
		p.r.note("producer %d: %v", p.n, err)
		return
	}
	defer cl.Close()
	for {
		i, rec, ok := p.nextRecord(stop, pace, -1, '-')
		if !ok {
			break
		}
		cl.Produce(ctx, rec, func(rec *kgo.Record, err error) { p.answered(i, rec, err) })
	}
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.r.cfg.DeliveryTimeout)
	defer cancel()
	if err := cl.Flush(flushCtx); err != nil {
		p.r.note("producer %d: delivering its last records: %v", p.n, err)
	}
}

// runTransactions produces in transactions of TransactionRecords records, aborting a
// random AbortFraction of them, and any whose records failed. A transaction whose end
// fails is unknown (its records Unacknowledged) and the client is made anew: the new
// one's InitProducerId fences the old and ends its transaction.
func (p *producer) runTransactions(ctx context.Context, stop <-chan struct{}, pace *pacer) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	retry := time.NewTimer(0)
	defer retry.Stop()
	backoff := time.Duration(0) // grows while BeginTransaction keeps failing
	for txn := int32(0); ; txn++ {
		select {
		case <-stop:
			return
		default:
		}
		if cl == nil {
			var err error
			if cl, err = p.client(); err != nil {
				p.r.note("producer %d: %v", p.n, err)
				retry.Reset(time.Second)
				select {
				case <-stop:
					return
				case <-retry.C:
				}
				continue
			}
		}
		if err := cl.BeginTransaction(); err != nil {
			p.r.note("producer %d: begin transaction: %v", p.n, err)
			cl.Close()
			cl = nil
			backoff = min(max(2*backoff, 100*time.Millisecond), maxBeginBackoff)
			retry.Reset(backoff)
			select {
			case <-stop:
				return
			case <-retry.C:
			}
			continue
		}
		backoff = 0
		abort := p.rng.Float64() < p.r.cfg.AbortFraction
		intent := byte('c')
		if abort {
			intent = 'a'
		}
		var idx []int
		var failed atomic.Bool
		for range p.r.cfg.TransactionRecords {
			i, rec, ok := p.nextRecord(stop, pace, txn, intent)
			if !ok {
				break
			}
			idx = append(idx, i)
			cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
				if err != nil {
					failed.Store(true)
				}
				p.answered(i, rec, err)
			})
		}
		endCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.r.cfg.DeliveryTimeout)
		flushErr := cl.Flush(endCtx)
		cancel()
		produceFailed := flushErr != nil || failed.Load()
		// Fresh contexts for the abort and the end: after a Flush that used up its
		// time, an expired one would send no EndTxn(abort) and leave the transaction
		// open, holding read_committed readers at the last stable offset until it
		// timed out.
		if produceFailed {
			abortCtx, cancelAbort := context.WithTimeout(context.WithoutCancel(ctx), p.r.cfg.DeliveryTimeout)
			if err := cl.AbortBufferedRecords(abortCtx); err != nil {
				p.r.note("producer %d: abort buffered records: %v", p.n, err)
			}
			cancelAbort()
		}
		endCtx, cancel = context.WithTimeout(context.WithoutCancel(ctx), p.r.cfg.DeliveryTimeout)
		commit := !abort && !produceFailed
		err := cl.EndTransaction(endCtx, kgo.TransactionEndTry(commit))
		cancel()
		switch {
		case !commit:
			p.ended(idx, Aborted, !abort) // never asked to commit, whatever the abort's answer
		case err == nil:
			p.ended(idx, Acknowledged, false)
		default:
			p.ended(idx, Unacknowledged, false)
		}
		if err != nil {
			p.r.note("producer %d: end transaction %d: %v", p.n, txn, err)
			cl.Close()
			cl = nil
		}
		if len(idx) < p.r.cfg.TransactionRecords {
			return // stopped or out of budget
		}
	}
}

// maxBeginBackoff bounds the wait between a failed BeginTransaction and the next
// client's attempt.
const maxBeginBackoff = 5 * time.Second

// pacer spaces one producer's records to its share of Config.Rate.
type pacer struct {
	interval time.Duration // 0: no pacing
	next     time.Time
	timer    *time.Timer
}

func newPacer(cfg Config) *pacer {
	if cfg.Rate <= 0 {
		return &pacer{}
	}
	return &pacer{interval: time.Duration(float64(cfg.Producers) / cfg.Rate * float64(time.Second)), next: time.Now()}
}

// wait waits for the next record's slot; false when stop closed first.
func (p *pacer) wait(stop <-chan struct{}) bool {
	if p.interval == 0 {
		return true
	}
	p.next = p.next.Add(p.interval)
	d := time.Until(p.next)
	if d <= 0 {
		return true
	}
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-stop:
		return false
	case <-p.timer.C:
		return true
	}
}
