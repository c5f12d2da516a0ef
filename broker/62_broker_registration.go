package broker

// BrokerRegistration (key 62), v0-4, internal: brokers send it to the controller over the
// Kafka listener; it is served but never advertised. A cluster-id mismatch is
// INCONSISTENT_CLUSTER_ID; a different incarnation while the old one's session is still
// valid is DUPLICATE_BROKER_REGISTRATION (Kafka's rule), unless the request names the
// registered incarnation as its previous one (Petrel's previousIncarnationTag: the
// process holds the data directory the registered incarnation recorded itself in, so
// that incarnation is dead; registration_file.go); a new incarnation is registered
// fenced with a new broker epoch (the Raft index of its record), and an old incarnation
// not fenced yet is fenced first in the same entry; the same incarnation keeps its epoch.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerInternalAPI(kmsg.BrokerRegistration, 0, 4, func(b *Broker, ctx context.Context, req *rpc.Request) rpc.Result {
		detachTags(&req.Body.(*kmsg.BrokerRegistrationRequest).UnknownTags) // answered on another goroutine
		return b.respondFromController(ctx, req)
	}, apiOpts{
		authorize:  clusterOnly(auth.OpClusterAction),
		controller: onController((*Broker).brokerRegistration),
		fillError:  fillErrorBrokerRegistration,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.BrokerRegistrationResponse).ErrorCode == kerr.NotController.Code
		},
		sessionConn: true,
	})
}

// Registration errors (mapped in errors.go).
var (
	ErrInconsistentClusterID       = errors.New("broker: cluster id does not match")
	ErrDuplicateBrokerRegistration = errors.New("broker: another incarnation of this broker id has a live session")
	ErrStaleBrokerEpoch            = errors.New("broker: stale broker epoch")
	ErrBrokerNotRegistered         = errors.New("broker: broker id not registered")
)

// brokerRegistration runs on the controller.
func (b *Broker) brokerRegistration(ctx context.Context, r *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	timeout := b.cfg.durationMs("broker.session.timeout.ms")
	incarnation := metadata.Uuid(r.IncarnationID)
	previous := previousIncarnationOf(r)
	newIncarnation, replacedLive := false, false
	im, err := b.ctrl.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		newIncarnation, replacedLive = false, false
		if im.ClusterID != "" && r.ClusterID != "" && r.ClusterID != im.ClusterID {
			return nil, fmt.Errorf("%w: broker %d has %q, the cluster is %q", ErrInconsistentClusterID, r.BrokerID, r.ClusterID, im.ClusterID)
		}
		existing := im.Brokers[r.BrokerID]
		if existing != nil && existing.IncarnationID == incarnation {
			return nil, nil // the same process again: keep epoch and fence state
		}
		replaces := existing != nil && previous != metadata.ZeroUuid && previous == existing.IncarnationID
		if existing != nil && !existing.Fenced && !replaces && b.ctrl.Sessions().Valid(r.BrokerID, time.Now(), timeout) {
			return nil, fmt.Errorf("%w: broker %d", ErrDuplicateBrokerRegistration, r.BrokerID)
		}
		newIncarnation = true
		// An old incarnation still unfenced (it died and its session expired, but the
		// controller has not fenced it yet) is fenced in the same entry, first: out of
		// every ISR and leadership, as when its session expiry is noticed. Otherwise the
		// restarted process would resume its old leaderships in the same leader epoch,
		// with whatever its log kept of an unclean shutdown (KIP-966's concern).
		var records []metadata.Record
		if existing != nil && !existing.Fenced {
			records = metadata.FenceBrokerRecords(im, r.BrokerID, b.uncleanAllowed(im))
			replacedLive = replaces
		}
		rec := metadata.RegisterBrokerRecord{BrokerID: r.BrokerID, IncarnationID: incarnation, Fenced: true}
		for _, l := range r.Listeners {
			rec.Listeners = append(rec.Listeners, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port)})
		}
		if r.Rack != nil {
			rec.Rack = *r.Rack
		}
		return append(records, rec), nil
	})
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "broker registration")
		return resp
	}
	resp.BrokerEpoch = im.Brokers[r.BrokerID].Epoch
	if replacedLive {
		b.logger.Info("broker restarted on its data directory: its previous incarnation fenced and replaced at once",
			"broker", r.BrokerID, "previous_incarnation", previous, "broker_epoch", resp.BrokerEpoch)
	}
	if newIncarnation {
		b.ctrl.Sessions().Registered(r.BrokerID, time.Now()) // a new process: a fresh session
	} else {
		b.ctrl.Sessions().Heartbeat(r.BrokerID, -1, false, time.Now()) // same process: stays as it was
	}
	return resp
}

// registrationRequest is this broker's registration.
func (b *Broker) registrationRequest() *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 2
	req.BrokerID = b.cfg.NodeID
	req.ClusterID = b.Image().ClusterID
	req.IncarnationID = b.incarnation
	for _, bl := range b.listeners {
		host, port := splitHostPort(bl.spec.Advertised)
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = bl.spec.Name, host, uint16(port), securityProtocolIDs[bl.spec.Protocol]
		req.Listeners = append(req.Listeners, l)
	}
	if rack := b.cfg.Properties["broker.rack"]; rack != "" {
		req.Rack = &rack
	}
	req.PreviousBrokerEpoch = -1 // Kafka's field (KIP-966, v3+): the epoch of a clean shutdown
	if b.previousIncarnation != metadata.ZeroUuid {
		req.UnknownTags.Set(previousIncarnationTag, b.previousIncarnation[:])
	}
	return req
}

// fillErrorBrokerRegistration is BrokerRegistration's apiOpts.fillError.
func fillErrorBrokerRegistration(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.BrokerRegistrationResponse)
	r.ErrorCode = code
}
