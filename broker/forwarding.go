package broker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Routing to the controller is decided here, in one place: a controller request is
// handled in process when this node is the Raft leader (controllerCall,
// controllerLocal), and otherwise sent over the Kafka listener of the controller the
// Raft leader names (controllerClients), on the session connection for registrations
// and heartbeats (controllerChannel). A request another broker forwarded is never
// forwarded again (fromBroker). The controller's decisions are controller/'s.
//
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

// controllerCall sends a controller request: handled in process when this node is the
// controller, otherwise over the Kafka listener of the controller.
func (b *Broker) controllerCall(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if b.IsController() {
		if resp, ok := b.controllerLocal(ctx, req); ok {
			return resp, nil
		}
	}
	return b.controllerChannel(req).call(ctx, b, req)
}

// controllerChannel is the connection req travels on to a remote controller:
// registrations and heartbeats have their own (apiOpts.sessionConn), so that a broker's
// session never waits behind its other controller requests.
func (b *Broker) controllerChannel(req kmsg.Request) *controllerClients {
	if a := apiFor(req.Key()); a != nil && a.sessionConn {
		return &b.heartbeats
	}
	return &b.controllers
}

// controllerLocal handles req on this node's controller (apiOpts.controller). It
// reports false for requests the controller does not handle in process. An admin
// change is answered once every live broker has applied it (admin_visibility.go).
func (b *Broker) controllerLocal(ctx context.Context, req kmsg.Request) (kmsg.Response, bool) {
	a := apiFor(req.Key())
	if a == nil || a.controller == nil {
		return nil, false
	}
	resp := a.controller(b, ctx, req)
	if a.adminChange {
		b.ctrl.AwaitApplied(ctx, b.Image().Offset)
	}
	return resp, true
}

// forwardedClientPrefix marks requests one broker sends another; they are never
// forwarded again, so brokers that briefly disagree on the controller cannot loop.
const forwardedClientPrefix = "petrel-broker-"

// fromBroker reports whether a request names itself another Petrel broker's: its client
// id starts with forwardedClientPrefix. The client id is not authenticated, so it only
// routes (a broker's request is not forwarded again, nor held until this broker is
// ready); no right depends on it (DESIGN.md, "Trust between brokers"): those come
// from the authenticated principal (auth.Checks.IsBroker, clusterPrincipal).
func fromBroker(req *rpc.Request) bool {
	return req.ClientID != nil && strings.HasPrefix(*req.ClientID, forwardedClientPrefix)
}

// respondFromController answers a controller request received over the wire: in
// process on the controller, or forwarded to it from any other broker. A controller
// API with nothing to do before that registers it as its handler.
func (b *Broker) respondFromController(ctx context.Context, req *rpc.Request) rpc.Result {
	body := req.Body
	if !b.IsController() && fromBroker(req) {
		return rpc.Respond(notControllerResponse(body, controller.ErrNotController))
	}
	ch := make(chan kmsg.Response, 1)
	b.goLoop("controller request", func() {
		resp, err := b.forwardToController(ctx, body)
		if err != nil {
			resp = notControllerResponse(body, err)
		}
		ch <- resp
	})
	return rpc.RespondLater(ch)
}

// notControllerResponse answers req with NOT_CONTROLLER on every resource
// (errorResponse).
func notControllerResponse(req kmsg.Request, cause error) kmsg.Response {
	return errorResponse(req, kerr.NotController.Code, cause)
}

// controllerClients keeps one connection to the current controller.
type controllerClients struct {
	mu     sync.Mutex
	addr   string
	client *rpc.Client
}

// call sends req to the controller named by Raft, reconnecting when the controller
// moved or the connection failed.
func (c *controllerClients) call(ctx context.Context, b *Broker, req kmsg.Request) (kmsg.Response, error) {
	id := b.ControllerID()
	im := b.Image()
	br, ok := im.Brokers[id]
	addr, known := b.interBrokerAddr(br)
	if id < 0 || !ok || !known {
		return nil, fmt.Errorf("%w: controller %d has no known address yet", controller.ErrNotController, id)
	}
	c.mu.Lock()
	if c.client != nil && (c.addr != addr || c.client.Err() != nil) {
		c.client.Close()
		c.client = nil
	}
	cl := c.client
	c.mu.Unlock()
	if cl == nil {
		// Dial without the lock held; if another caller installed a client meanwhile,
		// use that one.
		dialed, err := b.dialBroker(ctx, addr, fmt.Sprintf("%s%d", forwardedClientPrefix, b.cfg.NodeID))
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.client == nil {
			c.client, c.addr = dialed, addr
		} else {
			dialed.Close()
		}
		cl = c.client
		c.mu.Unlock()
	}
	resp, err := cl.Do(ctx, req)
	if err == nil {
		if isNotController(resp) {
			return nil, fmt.Errorf("%w: broker %d is not the controller any more", controller.ErrNotController, id)
		}
	}
	return resp, err
}

func (c *controllerClients) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}

// isNotController reports an answer from a node that is no controller, as its API reads
// it (apiOpts.isNotController): a NOT_CONTROLLER top-level error, or (CreateTopics,
// DeleteTopics, which have none) NOT_CONTROLLER for every topic.
func isNotController(resp kmsg.Response) bool {
	a := apiFor(resp.Key())
	return a != nil && a.isNotController != nil && a.isNotController(resp)
}

// allNotController reports a non-empty list whose every entry is NOT_CONTROLLER.
func allNotController[T any](items []T, code func(T) int16) bool {
	for _, it := range items {
		if code(it) != kerr.NotController.Code {
			return false
		}
	}
	return len(items) > 0
}
