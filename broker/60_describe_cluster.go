package broker

// DescribeCluster (key 60), v0-2: cluster id, controller id (the Raft leader) and the
// unfenced brokers; v2 with include_fenced_brokers lists fenced ones too, marked. v1+
// asking for controllers (endpoint type 2) gets MISMATCHED_ENDPOINT_TYPE: Petrel's
// controllers are not a separate endpoint.

import (
	"context"
	"errors"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeCluster, 0, 2, (*Broker).handleDescribeCluster, apiOpts{
		authorize: authorizeNothing,
	})
}

func (b *Broker) handleDescribeCluster(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	if r.Version >= 1 && r.EndpointType == 2 {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		resp.ErrorMessage = errorMessage(errors.New("this listener serves brokers, not controllers"))
		return rpc.Respond(resp)
	}
	im := b.Image()
	resp.ClusterID = im.ClusterID
	resp.ControllerID = b.ControllerID()
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.checks(req).AuthorizedOperations(auth.ResourceCluster, auth.ClusterName)
	}
	for _, id := range im.BrokerIDs() {
		br := im.Brokers[id]
		if br.Fenced && !(r.Version >= 2 && r.IncludeFencedBrokers) {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.IsFenced = id, br.Fenced
		if e, ok := endpointFor(br, req.Conn.ListenerName); ok {
			rb.Host, rb.Port = e.Host, e.Port
		}
		if br.Rack != "" {
			rack := br.Rack
			rb.Rack = &rack
		}
		resp.Brokers = append(resp.Brokers, rb)
	}
	return rpc.Respond(resp)
}
