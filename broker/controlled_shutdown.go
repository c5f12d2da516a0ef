package broker

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// shutdownEntryRecords bounds an entry of a controlled shutdown:
// metadata.MaxRecordsPerShutdownEntry (tests lower it).
var shutdownEntryRecords atomic.Int32

func init() { shutdownEntryRecords.Store(metadata.MaxRecordsPerShutdownEntry) }

// shutdownFinishers records, on the controller, the brokers whose controlled shutdown
// is being finished (their remaining ISR removals written), so that each has one writer.
type shutdownFinishers struct {
	mu      sync.Mutex
	running map[int32]bool
	clean   map[int32]int64 // fenced brokers seen in no shared ISR, at this broker epoch
}

// knownClean reports whether fenced broker id, registered at epoch, was seen in no
// shared ISR (a fenced broker is never added to one, so it stays so); mark records it.
func (f *shutdownFinishers) knownClean(id int32, epoch int64, mark bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if mark {
		if f.clean == nil {
			f.clean = map[int32]int64{}
		}
		f.clean[id] = epoch
	}
	e, ok := f.clean[id]
	return ok && e == epoch
}

// start reports whether the caller is to finish id's shutdown (no one else is).
func (f *shutdownFinishers) start(id int32) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[id] {
		return false
	}
	if f.running == nil {
		f.running = map[int32]bool{}
	}
	f.running[id] = true
	return true
}

func (f *shutdownFinishers) done(id int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, id)
}

// finishControlledShutdown takes broker id (registered at epoch, fenced, leading
// nothing) out of the ISRs its first controlled-shutdown entry left it in, in entries
// of at most shutdownEntryRecords records, after the broker was told it
// may stop: only its leaderships hold up its stop, as in Kafka, where the broker stops
// once it leads nothing. It gives up when the broker registers again, this node stops
// being the controller, or a minute has passed; the next controller's duties start it
// again for a fenced broker still in a shared ISR (finishFencedBrokers).
//
// A controller that is itself stopping leaves its own ISR removals to the next
// controller (it hands the quorum over as soon as its leaderships have moved: Shutdown),
// so its stop never waits for them: at 100,000 partitions each entry of them takes
// seconds to commit and apply, and its drain would wait for the one in flight.
func (b *Broker) finishControlledShutdown(id int32, epoch int64) {
	if id == b.cfg.NodeID && b.shuttingDown.Load() {
		return
	}
	if !b.finishers.start(id) {
		return
	}
	go func() {
		defer b.finishers.done(id)
		ctx, cancel := b.waitTimeout(context.Background(), time.Minute)
		defer cancel()
		for ctx.Err() == nil {
			im, err := b.controllerDo(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
				cur := im.Brokers[id]
				if cur == nil || cur.Epoch != epoch || !cur.Fenced {
					return nil, nil
				}
				records, _ := metadata.ControlledShutdownRecords(im, id, int(shutdownEntryRecords.Load()))
				return records, nil
			})
			if err != nil {
				b.logger.Debug("controlled shutdown: ISR removals not finished", "broker", id, "error", err)
				return
			}
			if cur := im.Brokers[id]; cur == nil || cur.Epoch != epoch || !cur.Fenced || !inSharedISR(im, id) {
				return
			}
		}
	}()
}

// finishFencedBrokers (a controller duty) finishes the controlled shutdown of every
// fenced broker still in an ISR it shares with another replica: one whose controller
// stopped before writing all its ISR removals (the stopping broker may have been the
// controller itself) is finished by the next controller.
func (b *Broker) finishFencedBrokers(im *metadata.Image) {
	for id, br := range im.Brokers {
		if !br.Fenced || b.finishers.knownClean(id, br.Epoch, false) {
			continue
		}
		if inSharedISR(im, id) {
			b.finishControlledShutdown(id, br.Epoch)
		} else {
			b.finishers.knownClean(id, br.Epoch, true)
		}
	}
}

// inSharedISR reports whether broker id is in an ISR it shares with another replica
// (one a controlled shutdown can still take it out of).
func inSharedISR(im *metadata.Image, id int32) bool {
	for _, name := range im.TopicNames() {
		for _, p := range im.Topics[name].Partitions {
			if len(p.ISR) > 1 && slices.Contains(p.ISR, id) {
				return true
			}
		}
	}
	return false
}
