package broker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// lifecycleLoop registers this broker with the controller and keeps its session with
// heartbeats every broker.heartbeat.interval.ms (every 200 ms while unregistered or
// fenced, so that a restarted broker is unfenced promptly). A registered, fenced broker
// also heartbeats as soon as its image reaches its registration (the offset the
// controller unfences it at), rather than on the next tick, and a registered broker
// heartbeats at once when it has peers' refused connections to report (peer_reports.go).
// A new controller is registered with or heartbeaten at once, not on the next tick.
func (b *Broker) lifecycleLoop() {
	interval := b.cfg.durationMs("broker.heartbeat.interval.ms")
	epoch := int64(-1)
	fenced := true
	caughtUpSent := int64(-1) // the epoch whose caught-up heartbeat was sent
	reported := uint64(0)     // the metadata offset the last heartbeat carried
	var lastSent time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		changed := b.machine.Changed()
		leaderChanged := b.leaders.changed()
		watch := epoch >= 0 && fenced && caughtUpSent != epoch
		if !watch || b.Image().Offset < uint64(epoch) {
			var catchUp, applied <-chan struct{}
			if watch {
				catchUp = changed
			} else if epoch >= 0 && !fenced {
				applied = changed
			}
			var refusals <-chan struct{}
			if epoch >= 0 {
				refusals = b.refusals.notify
			}
			select {
			case <-b.stop:
				return
			case <-b.draining:
				return
			case <-catchUp:
				continue // look at the new image
			case <-applied:
				// Report a newly applied metadata offset promptly (at most one
				// heartbeat per appliedReportGap): the controller answers an admin
				// change only once every live broker has applied it (admin_visibility.go).
				if b.Image().Offset <= reported {
					continue
				}
				if wait := appliedReportGap - time.Since(lastSent); wait > 0 {
					timer.Reset(wait)
					continue
				}
			case <-refusals:
			case <-leaderChanged:
				if b.ControllerID() < 0 {
					continue // no controller to talk to yet
				}
			case <-timer.C:
			}
		}
		if b.shuttingDown.Load() {
			return // controlledShutdown heartbeats from here on
		}
		ctx, cancel := b.waitTimeout(context.Background(), 5*time.Second)
		if epoch < 0 {
			epoch = b.register(ctx)
		} else {
			if b.Image().Offset >= uint64(epoch) {
				caughtUpSent = epoch
			}
			reported, lastSent = b.Image().Offset, time.Now()
			hb, err := b.heartbeat(ctx, epoch, false)
			switch {
			case err == nil:
				fenced = hb.IsFenced
				if fenced {
					b.trace.countHeartbeat()
				} else {
					b.trace.mark("heartbeat_unfenced")
				}
			case errors.Is(err, kerr.StaleBrokerEpoch), errors.Is(err, kerr.BrokerIDNotRegistered):
				epoch = -1
			}
		}
		cancel()
		b.brokerEpoch.Store(epoch)
		if epoch < 0 || fenced {
			timer.Reset(200 * time.Millisecond)
		} else {
			timer.Reset(interval)
		}
	}
}

// register sends this broker's registration; it returns the broker epoch or -1.
func (b *Broker) register(ctx context.Context) int64 {
	b.trace.mark("registration_sent")
	resp, err := b.controllerCall(ctx, b.registrationRequest())
	if err != nil {
		b.logger.Debug("registration not done", "error", err)
		return -1
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		b.logger.Debug("registration refused", "error", err)
		return -1
	}
	b.trace.mark("registration_answered")
	b.logger.Info("registered with the controller", "broker_epoch", r.BrokerEpoch)
	b.persistRegistration(r.BrokerEpoch)
	return r.BrokerEpoch
}

// heartbeat sends one heartbeat; Kafka errors come back as kerr errors.
func (b *Broker) heartbeat(ctx context.Context, epoch int64, wantShutdown bool) (*kmsg.BrokerHeartbeatResponse, error) {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, epoch
	req.CurrentMetadataOffset = int64(b.Image().Offset)
	req.WantShutdown = wantShutdown
	if req.CurrentMetadataOffset >= epoch {
		b.trace.mark("heartbeat_caught_up_sent")
	}
	refused := b.refusals.take(time.Now())
	if len(refused) > 0 {
		req.UnknownTags.Set(refusedPeersTag, encodeRefusedPeers(refused))
	}
	resp, err := b.controllerCall(ctx, req)
	if err != nil {
		b.refusals.requeue(refused)
		return nil, err
	}
	hb := resp.(*kmsg.BrokerHeartbeatResponse)
	return hb, kerr.ErrorForCode(hb.ErrorCode)
}

// controlledShutdown asks the controller to move this broker's leaderships away and
// waits until it leads nothing (or ctx ends), as Kafka's controlled shutdown does.
func (b *Broker) controlledShutdown(ctx context.Context) {
	epoch := b.brokerEpoch.Load()
	if epoch < 0 || b.metadataStoreFailure() != nil {
		return // unregistered, or no controller to ask (metadata_store.go)
	}
	for ctx.Err() == nil {
		// No shorter bound than ctx: the controller answers once the entry moving this
		// broker's leaderships is committed, which takes seconds at 100,000 partitions,
		// and a retry would only queue behind it.
		hb, err := b.heartbeat(ctx, epoch, true)
		if err == nil && hb.ShouldShutdown {
			b.logger.Info("controlled shutdown: this broker leads nothing now")
			return
		}
		if err != nil && (errors.Is(err, kerr.StaleBrokerEpoch) || errors.Is(err, kerr.BrokerIDNotRegistered)) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
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
		b.awaitAppliedEverywhere(ctx, b.Image().Offset)
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
// from the authenticated principal (brokerRequest, clusterPrincipal).
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
