package broker

// What each API checks, in Kafka's terms (KafkaApis and "Operations and Resources on
// Protocols"): each API's rule is set in its file's init (apiOpts.authorize) and built
// of the checks here. checkRequest runs before the handler (and before forwarding to the
// controller, whose forwarded copy comes from a broker): it either answers the whole
// request (authorization failed for all of it), or removes the denied resources from
// the request and returns a function that adds their errors to the response, or
// filters a response (Metadata for all topics, ListGroups, ListTransactions).

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authzDecision is checkRequest's outcome; the zero value lets the request through.
type authzDecision struct {
	answer kmsg.Response            // answer with this; the handler is not called
	close  error                    // close the connection (acks=0 produce)
	merge  func(resp kmsg.Response) // run on the handler's response
}

// withAuthorization wraps a handler with checkRequest.
func (b *Broker) withAuthorization(h rpc.Handler) rpc.Handler {
	return func(ctx context.Context, req *rpc.Request) rpc.Result {
		if !b.authzEnabled() {
			return h(ctx, req)
		}
		d := b.checkRequest(req)
		switch {
		case d.close != nil:
			return rpc.CloseConnection(d.close)
		case d.answer != nil:
			return rpc.Respond(d.answer)
		}
		res := h(ctx, req)
		if d.merge == nil {
			return res
		}
		return res.OnResponse(func(resp kmsg.Response) time.Duration { d.merge(resp); return 0 })
	}
}

var (
	codeTopicAuthz   = errorCode(ErrTopicAuthorizationFailed)
	codeGroupAuthz   = errorCode(ErrGroupAuthorizationFailed)
	codeClusterAuthz = errorCode(ErrClusterAuthorizationFailed)
	codeTxnAuthz     = errorCode(ErrTransactionalIDAuthorizationFailed)
)

// authzRule is an API's authorization rule, set in its file's init (apiOpts.authorize).
type authzRule func(b *Broker, req *rpc.Request) authzDecision

// checkRequest decides req by its API's rule; a request of an API without one closes
// its connection (registerAPI refuses such an API, so this is unreachable).
func (b *Broker) checkRequest(req *rpc.Request) authzDecision {
	a := apiFor(req.Body.Key())
	if a == nil || a.authorize == nil {
		return authzDecision{close: fmt.Errorf("%w: api key %d", errNoAuthorizationRule, req.Key)}
	}
	return a.authorize(b, req)
}

// authorizeNothing is the rule of the APIs that check nothing, as in Kafka: the SASL
// exchange comes before there is a principal, and DescribeCluster names only brokers
// (its cluster authorized operations are filled for the principal).
func authorizeNothing(*Broker, *rpc.Request) authzDecision { return authzDecision{} }

// authzChecks adapt auth.Checks to a rule of one request: each check asks the
// authorizer over the ACLs current when it runs (a merge runs after the handler).
type authzChecks struct {
	b   *Broker
	req *rpc.Request
}

func checksOf(b *Broker, req *rpc.Request) authzChecks { return authzChecks{b, req} }

func (z authzChecks) topicOK(op auth.Operation, name string) bool {
	return z.b.checks(z.req).Topic(op, name)
}

func (z authzChecks) groupOK(op auth.Operation, name string) bool {
	return z.b.checks(z.req).Group(op, name)
}

func (z authzChecks) txnOK(name string) bool {
	return z.b.checks(z.req).TransactionalID(auth.OpWrite, name)
}

func (z authzChecks) clusterOK(op auth.Operation) bool { return z.b.checks(z.req).Cluster(op) }

// whole answers the whole request: fill sets the errors of the API's response.
func (z authzChecks) whole(fill func(resp kmsg.Response)) authzDecision {
	resp := z.req.Body.ResponseKind()
	resp.SetVersion(z.req.Version)
	fill(resp)
	return authzDecision{answer: resp}
}

// denyAll answers the whole request with code on every resource, as its API fills a
// whole-request error (apiOpts.fillError); cause is the message (nil: none).
func (z authzChecks) denyAll(code int16, cause error) authzDecision {
	fill := apiFor(z.req.Body.Key()).fillError
	return z.whole(func(resp kmsg.Response) { fill(z.req.Body, resp, code, cause) })
}

// clusterOnly is the rule of an API that needs op on the cluster: without it every
// resource of the request is CLUSTER_AUTHORIZATION_FAILED, with Kafka's message, as the
// API fills a whole-request error (denyAll).
func clusterOnly(op auth.Operation) authzRule {
	return clusterOnlyBecause(op, ErrClusterAuthorizationFailed)
}

// clusterOnlyCode is clusterOnly answering the code alone, without a message (the APIs
// that have always answered so).
func clusterOnlyCode(op auth.Operation) authzRule { return clusterOnlyBecause(op, nil) }

func clusterOnlyBecause(op auth.Operation, cause error) authzRule {
	return func(b *Broker, req *rpc.Request) authzDecision {
		z := checksOf(b, req)
		if z.clusterOK(op) {
			return authzDecision{}
		}
		return z.denyAll(codeClusterAuthz, cause)
	}
}

// split returns the elements ok keeps and the others, in order.
func split[T any](s []T, ok func(T) bool) (kept, denied []T) {
	for _, v := range s {
		if ok(v) {
			kept = append(kept, v)
		} else {
			denied = append(denied, v)
		}
	}
	if kept == nil && s != nil {
		kept = s[:0]
	}
	return kept, denied
}

// mergeErrors, when cond holds, answers in the handler's response every resource of
// denied, a request of the same API holding only the denied resources, with code, as
// the API fills a whole-request error (apiOpts.fillError); cause is the message.
func mergeErrors(cond bool, denied kmsg.Request, code int16, cause error) authzDecision {
	fill := apiFor(denied.Key()).fillError
	return mergeIf(cond, func(resp kmsg.Response) { fill(denied, resp, code, cause) })
}

func mergeIf(cond bool, f func(kmsg.Response)) authzDecision {
	if !cond {
		return authzDecision{}
	}
	return authzDecision{merge: f}
}
