package broker

// group.coordinator.rebalance.protocols: without "consumer" the broker serves no
// KIP-848 consumer group APIs. As in Kafka, ApiVersions leaves ConsumerGroupHeartbeat
// (68) and ConsumerGroupDescribe (69) out, and a client that sends one anyway gets
// UNSUPPORTED_VERSION in the response (KafkaApis answers so when the consumer protocol
// is not enabled), not a closed connection.

import (
	"context"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerProtocolAPIs are the APIs of the consumer group protocol.
var consumerProtocolAPIs = map[kmsg.Key]bool{kmsg.ConsumerGroupHeartbeat: true, kmsg.ConsumerGroupDescribe: true}

// apiDisabled reports whether this broker's properties turn key off.
func (b *Broker) apiDisabled(key kmsg.Key) bool {
	return consumerProtocolAPIs[key] && !config.ConsumerProtocolEnabled(b.cfg.Properties)
}

// answerUnsupported is the handler of a disabled API (unsupportedResponse).
func answerUnsupported(_ context.Context, req *rpc.Request) rpc.Result {
	return rpc.Respond(unsupportedResponse(req.Body))
}

// unsupportedResponse answers req UNSUPPORTED_VERSION, for the request and each group
// it names.
func unsupportedResponse(req kmsg.Request) kmsg.Response {
	code := kerr.UnsupportedVersion.Code
	msg := kmsg.StringPtr("The consumer group protocol is not enabled (group.coordinator.rebalance.protocols).")
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.ConsumerGroupHeartbeatResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.ConsumerGroupDescribeResponse:
		for _, g := range req.(*kmsg.ConsumerGroupDescribeRequest).Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode, rg.ErrorMessage = g, code, msg
			r.Groups = append(r.Groups, rg)
		}
	}
	return resp
}
