package broker

// InitProducerId (key 22), v0-5, for idempotent (non-transactional) producers; any
// broker answers. A request without a producer id gets a new one with epoch 0, from this
// broker's block of ids (coordinator.ProducerIDs; allocated through the metadata log, so ids
// are unique across brokers). From v3 (KIP-360) a producer that sends its current id and
// epoch gets the same id with the epoch bumped; an exhausted epoch (32766) gets a new id
// at epoch 0. Kafka itself hands a non-transactional producer a new id either way; both
// leave the client with an id and epoch no earlier batch carries. The id and epoch must
// both be -1 or both be set (INVALID_REQUEST). With no id block available within the
// request's budget the answer is COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
//
// With a transactional id the request goes to the id's transaction coordinator
// (txn.Shard.InitProducerID: a new id, or the epoch bumped, fencing the previous
// producer and aborting its open transaction); a broker that is not the coordinator
// answers NOT_COORDINATOR. Before v4 PRODUCER_FENCED is answered as
// INVALID_PRODUCER_EPOCH, as Kafka does.

import (
	"context"
	"math"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// initProducerIDWait bounds how long InitProducerId waits for a block of ids.
const initProducerIDWait = 5 * time.Second

func init() {
	registerAPI(kmsg.InitProducerID, 0, 5, (*Broker).handleInitProducerID, apiOpts{
		authorize: authorizeInitProducerID,
	})
}

func (b *Broker) handleInitProducerID(ctx context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case r.TransactionalID != nil:
		return b.initTransactionalProducerID(ctx, r)
	case (r.ProducerID < 0) != (r.ProducerEpoch < 0):
		resp.ErrorCode = kerr.InvalidRequest.Code
		return rpc.Respond(resp)
	case r.ProducerID >= 0 && r.ProducerEpoch < math.MaxInt16-1:
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
		return rpc.Respond(resp)
	}
	if id, ok := b.producerIDs.TryGenerate(); ok {
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return rpc.Respond(resp)
	}
	ch := make(chan kmsg.Response, 1)
	b.goLoop("init producer id", func() {
		wctx, cancel := b.waitTimeout(ctx, initProducerIDWait)
		defer cancel()
		id, err := b.producerIDs.Generate(wctx)
		if err != nil {
			resp.ErrorCode = b.errorCodeLogged(err, "init producer id")
		} else {
			resp.ProducerID, resp.ProducerEpoch = id, 0
		}
		ch <- resp
	})
	return rpc.RespondLater(ch)
}

// initTransactionalProducerID runs InitProducerId on the transaction coordinator, once
// a producer id is at hand (the coordinator's executor never waits for one).
func (b *Broker) initTransactionalProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) rpc.Result {
	ch := make(chan kmsg.Response, 1)
	b.goLoop("init transactional producer id", func() {
		wctx, cancel := b.waitTimeout(ctx, initProducerIDWait)
		err := b.producerIDs.Ready(wctx)
		cancel()
		if err != nil {
			ch <- coordinator.InitProducerIDError(r, b.errorCodeLogged(err, "init producer id"))
			return
		}
		b.txns.InitProducerID(r, b.producerIDs.TryGenerate, func(resp kmsg.Response) { ch <- resp })
	})
	return rpc.RespondLater(ch)
}

// authorizeInitProducerID is InitProducerID's authorization rule (checkRequest).
func authorizeInitProducerID(b *Broker, req *rpc.Request) authzDecision {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	z := checksOf(b, req)
	if r.TransactionalID != nil {
		if !z.txnOK(*r.TransactionalID) {
			return z.whole(func(resp kmsg.Response) {
				out := resp.(*kmsg.InitProducerIDResponse)
				out.ErrorCode, out.ProducerID, out.ProducerEpoch = codeTxnAuthz, -1, -1
			})
		}
	} else if !z.clusterOK(auth.OpIdempotentWrite) && !b.checks(req).AllowedAny(auth.OpWrite, auth.ResourceTopic) {
		return z.whole(func(resp kmsg.Response) {
			out := resp.(*kmsg.InitProducerIDResponse)
			out.ErrorCode, out.ProducerID, out.ProducerEpoch = codeClusterAuthz, -1, -1
		})
	}
	return authzDecision{} // nothing refused
}
