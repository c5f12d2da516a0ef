package controller

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// ControlledShutdown handles a heartbeat of broker id (registered at epoch) asking for
// a controlled shutdown: the first fences it and moves its leaderships away in one
// entry, with as many of its ISR removals as fit (Config.ShutdownEntryRecords); a later
// one moves any leadership left. The rest of its ISR removals are written on their own
// afterwards (finishControlledShutdown), so a heartbeat never waits for them. It
// returns the image after the change.
//
// When every other unfenced broker has asked for a controlled shutdown too, the whole
// cluster is stopping and no broker is left to take the leaderships: it writes nothing
// and reports clusterStopping, as Kafka's controller answers ShouldShutdown when no
// other leader is eligible. The same holds for a request already waiting for its entry
// when the last other broker asks: it returns at once rather than after the commit
// (which a quorum whose voters are stopping may never make).
func (c *Controller) ControlledShutdown(ctx context.Context, id int32, epoch int64) (im *metadata.Image, clusterStopping bool, err error) {
	if all, _ := c.sessions.OthersShuttingDown(c.cfg.Image(), id); all {
		c.log.Debug("controlled shutdown: every other broker is stopping too; leaderships stay", "broker", id)
		return c.cfg.Image(), true, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stopping atomic.Bool
	go func() {
		for {
			all, next := c.sessions.OthersShuttingDown(c.cfg.Image(), id)
			if all {
				stopping.Store(true)
				cancel()
				return
			}
			select {
			case <-next:
			case <-ctx.Done():
				return
			}
		}
	}()
	im, err = c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		cur := im.Brokers[id]
		if cur == nil || cur.Epoch != epoch {
			return nil, nil
		}
		if cur.Fenced {
			// A later heartbeat: leaderships only (normally none left); the ISR
			// removals are finishControlledShutdown's, so a heartbeat never waits
			// for them.
			changes, _ := metadata.ControlledShutdownRecords(im, id, 0)
			return changes, nil
		}
		records := []metadata.Record{metadata.FenceBrokerRecord{BrokerID: id, BrokerEpoch: cur.Epoch}}
		changes, _ := metadata.ControlledShutdownRecords(im, id, c.cfg.ShutdownEntryRecords-len(records))
		return append(records, changes...), nil
	})
	if err != nil && stopping.Load() {
		c.log.Debug("controlled shutdown: every other broker is stopping too; not waiting for the leaderships to move", "broker", id)
		return c.cfg.Image(), true, nil
	}
	if err == nil && inSharedISR(im, id) {
		c.finishControlledShutdown(id, epoch)
	}
	return im, false, err
}

// Unfence unfences broker id, registered at epoch and caught up with the metadata log,
// electing leaders for the partitions that had none; it returns the image after it.
func (c *Controller) Unfence(ctx context.Context, id int32, epoch int64) (*metadata.Image, error) {
	return c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		cur := im.Brokers[id]
		if cur == nil || cur.Epoch != epoch || !cur.Fenced {
			return nil, nil
		}
		records := metadata.UnfenceBrokerRecords(im, id, c.cfg.UncleanAllowed(im))
		c.LogUncleanElections(im, records)
		return records, nil
	})
}

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
// of at most Config.ShutdownEntryRecords records, after the broker was told it
// may stop: only its leaderships hold up its stop, as in Kafka, where the broker stops
// once it leads nothing. It gives up when the broker registers again, this node stops
// being the controller, or a minute has passed; the next controller's duties start it
// again for a fenced broker still in a shared ISR (finishFencedBrokers).
//
// A controller that is itself stopping leaves its own ISR removals to the next
// controller (it hands the quorum over as soon as its leaderships have moved: Shutdown),
// so its stop never waits for them: at 100,000 partitions each entry of them takes
// seconds to commit and apply, and its drain would wait for the one in flight.
func (c *Controller) finishControlledShutdown(id int32, epoch int64) {
	if id == c.cfg.NodeID && c.cfg.ShuttingDown() {
		return
	}
	if !c.finishers.start(id) {
		return
	}
	go func() {
		defer c.finishers.done(id)
		ctx, cancel := c.bounded(context.Background(), time.Minute)
		defer cancel()
		for ctx.Err() == nil {
			im, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
				cur := im.Brokers[id]
				if cur == nil || cur.Epoch != epoch || !cur.Fenced {
					return nil, nil
				}
				records, _ := metadata.ControlledShutdownRecords(im, id, c.cfg.ShutdownEntryRecords)
				return records, nil
			})
			if err != nil {
				c.log.Debug("controlled shutdown: ISR removals not finished", "broker", id, "error", err)
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
func (c *Controller) finishFencedBrokers(im *metadata.Image) {
	for id, br := range im.Brokers {
		if !br.Fenced || c.finishers.knownClean(id, br.Epoch, false) {
			continue
		}
		if inSharedISR(im, id) {
			c.finishControlledShutdown(id, br.Epoch)
		} else {
			c.finishers.knownClean(id, br.Epoch, true)
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
