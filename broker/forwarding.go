package broker

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Forwarding follows the controller as it moves: a request forwarded to the controller
// that fails because the controller is gone (NOT_CONTROLLER, or its connection refused
// or broken) is sent again as soon as Raft observes a leader change, instead of handing
// NOT_CONTROLLER back to the client and waiting out its retry backoff.

// forwardRetryBackoff paces retries of a forward between leader observations: a crashed
// controller is noticed by Raft only after controller.quorum.fetch.timeout.ms, and its
// connection fails at once, so the retry must not spin.
const forwardRetryBackoff = 50 * time.Millisecond

// forwardDefaultTimeout bounds the retries of a forwarded request that carries no
// timeout of its own (Kafka's request.timeout.ms default).
const forwardDefaultTimeout = 30 * time.Second

// defaultAdminTimeout bounds a cluster operation whose request carries no timeout.
const defaultAdminTimeout = 30 * time.Second

// leaderWatch turns hashicorp/raft's leader observations into a channel that is closed
// at the next leader change, like fsm.FSM's Changed.
type leaderWatch struct {
	mu sync.Mutex
	ch chan struct{}
}

func newLeaderWatch() *leaderWatch { return &leaderWatch{ch: make(chan struct{})} }

// changed returns a channel closed at the next observed leader change.
func (w *leaderWatch) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

func (w *leaderWatch) notify() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

// watchLeader registers a Raft observer for leader changes and runs until the broker
// stops. Observations are dropped when the channel is full: the watch only needs to
// know that something changed.
func (b *Broker) watchLeader() {
	obsCh := make(chan raft.Observation, 8)
	obs := raft.NewObserver(obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	b.raft.raft.RegisterObserver(obs)
	defer b.raft.raft.DeregisterObserver(obs)
	for {
		select {
		case <-b.stop:
			return
		case <-obsCh:
			b.leaders.notify()
		}
	}
}

// forwardToController sends a client's controller request to the controller (in
// process when this node is it) and, while the controller is missing or moving, sends
// it again at each leader change (or every forwardRetryBackoff) until it is answered,
// the request's own timeout passes or ctx ends; the last answer or error is returned
// then. A request waiting on a remote controller is abandoned and sent again when the
// leader changes: the old controller crashed or lost its term. A NOT_CONTROLLER answer
// (isNotController) counts as not answered.
func (b *Broker) forwardToController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := b.waitTimeout(ctx, forwardTimeout(req))
	defer cancel()
	for {
		changed := b.leaders.changed()
		resp, err := b.forwardOnce(ctx, req, changed)
		if err == nil && !isNotController(resp) {
			return resp, nil
		}
		if ctx.Err() != nil || b.metadataStoreFailure() != nil {
			return resp, err // no controller will ever be known here (metadata_store.go)
		}
		b.logger.Debug("forward to the controller not answered; retrying at the next leader change", "error", err)
		timer := time.NewTimer(forwardRetryBackoff)
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		if ctx.Err() != nil {
			if err == nil {
				return resp, nil
			}
			return nil, err
		}
	}
}

// forwardOnce is one attempt of forwardToController. A remote attempt is cancelled when
// changed closes; an in-process one runs to its end (the controller answers
// NOT_CONTROLLER itself when it loses its term).
func (b *Broker) forwardOnce(ctx context.Context, req kmsg.Request, changed <-chan struct{}) (kmsg.Response, error) {
	if b.IsController() {
		return b.controllerCall(ctx, req)
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-changed:
			cancel()
		case <-actx.Done():
		}
	}()
	return b.controllerChannel(req).call(actx, b, req)
}

// forwardTimeout is how long a forwarded request may wait for a controller: its own
// timeout where its API says so (apiOpts.ownTimeout), else forwardDefaultTimeout.
func forwardTimeout(req kmsg.Request) time.Duration {
	var ms int32
	if a := apiFor(req.Key()); a != nil && a.ownTimeout {
		ms = req.(kmsg.TimeoutRequest).Timeout()
	}
	if ms <= 0 {
		return forwardDefaultTimeout
	}
	return time.Duration(ms) * time.Millisecond
}

// metadataControllerID is the controller id a Metadata response names. Kafka's KRaft
// brokers name any live broker, since every broker forwards controller requests; Petrel
// names the Raft leader while it is heard from, so that tools see the real controller,
// and this broker itself while the leader is unknown or silent for longer than
// controller.quorum.fetch.timeout.ms (crashed, most likely): a client then sends its
// admin requests here, and they are forwarded as soon as a new controller is elected,
// instead of the client dialling a dead node and backing off.
func (b *Broker) metadataControllerID() int32 {
	if b.IsController() {
		return b.cfg.NodeID
	}
	id := b.ControllerID()
	if br, ok := b.Image().Brokers[b.cfg.NodeID]; !ok || br.Fenced {
		return id // not listed in Metadata: clients could not reach it by id
	}
	if id < 0 || id == b.cfg.NodeID {
		return b.cfg.NodeID
	}
	last := b.raft.raft.LastContact()
	if last.IsZero() || time.Since(last) > b.cfg.durationMs("controller.quorum.fetch.timeout.ms") {
		return b.cfg.NodeID
	}
	return id
}
