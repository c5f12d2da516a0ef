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
	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/controller"
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

// brokerRegistration runs on the controller (controller/registration.go decides).
func (b *Broker) brokerRegistration(ctx context.Context, r *kmsg.BrokerRegistrationRequest) *kmsg.BrokerRegistrationResponse {
	resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	reg := controller.Registration{BrokerID: r.BrokerID, ClusterID: r.ClusterID,
		Incarnation: metadata.Uuid(r.IncarnationID), Previous: previousIncarnationOf(r), PreviousBrokerEpoch: -1}
	if r.Version >= 3 {
		reg.PreviousBrokerEpoch = r.PreviousBrokerEpoch
	}
	for _, l := range r.Listeners {
		reg.Listeners = append(reg.Listeners, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port)})
	}
	if r.Rack != nil {
		reg.Rack = *r.Rack
	}
	reg.Features = registrationFeatures(r) // feature_levels.go
	epoch, err := b.ctrl.Register(ctx, reg)
	if err != nil {
		resp.ErrorCode = b.errorCodeLogged(err, "broker registration")
		return resp
	}
	resp.BrokerEpoch = epoch
	return resp
}

// registrationRequest is this broker's registration.
func (b *Broker) registrationRequest() *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 3 // PreviousBrokerEpoch (KIP-966)
	req.BrokerID = b.cfg.NodeID
	req.ClusterID = b.Image().ClusterID
	req.IncarnationID = b.incarnation
	addSupportedFeatures(req) // feature_levels.go
	for _, bl := range b.listeners {
		host, port := splitHostPort(bl.spec.Advertised)
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port = bl.spec.Name, host, uint16(port)
		l.SecurityProtocol, _ = config.SecurityProtocolID(bl.spec.Protocol)
		req.Listeners = append(req.Listeners, l)
	}
	if rack := b.cfg.Properties["broker.rack"]; rack != "" {
		req.Rack = &rack
	}
	req.PreviousBrokerEpoch = b.previousBrokerEpoch.Load() // the epoch of a clean shutdown (clean_shutdown_epoch.go)
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
