package broker

// What each API checks, in Kafka's terms (KafkaApis and "Operations and Resources on
// Protocols"). checkRequest runs before the handler (and before forwarding to the
// controller, whose forwarded copy comes from a broker): it either answers the whole
// request (authorization failed for all of it), or removes the denied resources from
// the request and returns a function that adds their errors to the response, or
// filters a response (Metadata for all topics, ListGroups, ListTransactions).

import (
	"context"
	"slices"
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

// checkRequest decides req per its API.
func (b *Broker) checkRequest(req *rpc.Request) authzDecision {
	topicOK := func(op auth.Operation, name string) bool { return b.authorized(req, op, auth.ResourceTopic, name) }
	groupOK := func(op auth.Operation, name string) bool { return b.authorized(req, op, auth.ResourceGroup, name) }
	txnOK := func(name string) bool { return b.authorized(req, auth.OpWrite, auth.ResourceTransactionalID, name) }
	clusterOK := func(op auth.Operation) bool { return b.authorizedCluster(req, op) }
	whole := func(fill func(resp kmsg.Response)) authzDecision {
		resp := req.Body.ResponseKind()
		resp.SetVersion(req.Version)
		fill(resp)
		return authzDecision{answer: resp}
	}
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		return b.checkProduce(req, r, topicOK, txnOK)
	case *kmsg.FetchRequest:
		return b.checkFetch(req, r, topicOK, clusterOK)
	case *kmsg.MetadataRequest:
		return b.checkMetadata(r, topicOK, clusterOK)
	case *kmsg.ListOffsetsRequest:
		var denied []kmsg.ListOffsetsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return topicOK(auth.OpDescribe, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.ListOffsetsResponse)
			for _, t := range denied {
				rt := kmsg.NewListOffsetsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.Timestamp, rp.Offset, rp.LeaderEpoch = p.Partition, codeTopicAuthz, -1, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.OffsetCommitRequest:
		groupDenied := !groupOK(auth.OpRead, r.Group)
		var denied []kmsg.OffsetCommitRequestTopic
		if groupDenied {
			denied, r.Topics = r.Topics, nil
		} else {
			r.Topics, denied = split(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return topicOK(auth.OpRead, t.Topic) })
		}
		add := func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetCommitResponse)
			code := codeTopicAuthz
			if groupDenied {
				code = codeGroupAuthz
			}
			for _, t := range denied {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}
		if groupDenied {
			return whole(add)
		}
		return mergeIf(len(denied) > 0, add)
	case *kmsg.OffsetFetchRequest:
		return b.checkOffsetFetch(req, r, topicOK, groupOK)
	case *kmsg.FindCoordinatorRequest:
		ok := func(key string) bool {
			if r.CoordinatorType == 1 {
				return b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, key)
			}
			return groupOK(auth.OpDescribe, key)
		}
		code := codeGroupAuthz
		if r.CoordinatorType == 1 {
			code = codeTxnAuthz
		}
		if r.Version < 4 {
			if ok(r.CoordinatorKey) {
				return authzDecision{}
			}
			return whole(func(resp kmsg.Response) {
				out := resp.(*kmsg.FindCoordinatorResponse)
				out.ErrorCode, out.NodeID, out.Port = code, -1, -1
			})
		}
		var denied []string
		r.CoordinatorKeys, denied = split(r.CoordinatorKeys, ok)
		add := func(resp kmsg.Response) {
			out := resp.(*kmsg.FindCoordinatorResponse)
			for _, k := range denied {
				c := kmsg.NewFindCoordinatorResponseCoordinator()
				c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, code
				out.Coordinators = append(out.Coordinators, c)
			}
		}
		if len(r.CoordinatorKeys) == 0 && len(denied) > 0 {
			return whole(add) // every key denied: nothing is looked up, nothing created
		}
		return mergeIf(len(denied) > 0, add)
	case *kmsg.JoinGroupRequest:
		if !groupOK(auth.OpRead, r.Group) {
			return whole(func(resp kmsg.Response) {
				out := resp.(*kmsg.JoinGroupResponse)
				out.ErrorCode, out.Generation, out.MemberID = codeGroupAuthz, -1, r.MemberID
			})
		}
	case *kmsg.SyncGroupRequest:
		if !groupOK(auth.OpRead, r.Group) {
			return whole(func(resp kmsg.Response) { resp.(*kmsg.SyncGroupResponse).ErrorCode = codeGroupAuthz })
		}
	case *kmsg.HeartbeatRequest:
		if !groupOK(auth.OpRead, r.Group) {
			return whole(func(resp kmsg.Response) { resp.(*kmsg.HeartbeatResponse).ErrorCode = codeGroupAuthz })
		}
	case *kmsg.LeaveGroupRequest:
		if !groupOK(auth.OpRead, r.Group) {
			return whole(func(resp kmsg.Response) { resp.(*kmsg.LeaveGroupResponse).ErrorCode = codeGroupAuthz })
		}
	case *kmsg.DescribeGroupsRequest:
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return groupOK(auth.OpDescribe, g) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeGroupsResponse)
			for _, g := range denied {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, codeGroupAuthz
				out.Groups = append(out.Groups, rg)
			}
		})
	case *kmsg.ListGroupsRequest:
		if clusterOK(auth.OpDescribe) {
			return authzDecision{}
		}
		return authzDecision{merge: func(resp kmsg.Response) {
			out := resp.(*kmsg.ListGroupsResponse)
			out.Groups = slices.DeleteFunc(out.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return !groupOK(auth.OpDescribe, g.Group) })
		}}
	case *kmsg.DeleteGroupsRequest:
		var denied []string
		r.Groups, denied = split(r.Groups, func(g string) bool { return groupOK(auth.OpDelete, g) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteGroupsResponse)
			for _, g := range denied {
				rg := kmsg.NewDeleteGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, codeGroupAuthz
				out.Groups = append(out.Groups, rg)
			}
		})
	case *kmsg.OffsetDeleteRequest:
		if !groupOK(auth.OpDelete, r.Group) {
			return whole(func(resp kmsg.Response) { resp.(*kmsg.OffsetDeleteResponse).ErrorCode = codeGroupAuthz })
		}
		var denied []kmsg.OffsetDeleteRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return topicOK(auth.OpRead, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetDeleteResponse)
			for _, t := range denied {
				rt := kmsg.NewOffsetDeleteResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetDeleteResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuthz
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.InitProducerIDRequest:
		if r.TransactionalID != nil {
			if !txnOK(*r.TransactionalID) {
				return whole(func(resp kmsg.Response) {
					out := resp.(*kmsg.InitProducerIDResponse)
					out.ErrorCode, out.ProducerID, out.ProducerEpoch = codeTxnAuthz, -1, -1
				})
			}
		} else if !clusterOK(auth.OpIdempotentWrite) && !b.authorizedAny(req, auth.OpWrite, auth.ResourceTopic) {
			return whole(func(resp kmsg.Response) {
				out := resp.(*kmsg.InitProducerIDResponse)
				out.ErrorCode, out.ProducerID, out.ProducerEpoch = codeClusterAuthz, -1, -1
			})
		}
	case *kmsg.AddPartitionsToTxnRequest:
		if r.Version >= 4 {
			if !clusterOK(auth.OpClusterAction) {
				return whole(func(resp kmsg.Response) { resp.(*kmsg.AddPartitionsToTxnResponse).ErrorCode = codeClusterAuthz })
			}
			return authzDecision{}
		}
		txnDenied := !txnOK(r.TransactionalID)
		anyDenied := txnDenied
		for _, t := range r.Topics {
			anyDenied = anyDenied || !topicOK(auth.OpWrite, t.Topic)
		}
		if !anyDenied {
			return authzDecision{}
		}
		return whole(func(resp kmsg.Response) {
			out := resp.(*kmsg.AddPartitionsToTxnResponse)
			for _, t := range r.Topics {
				code := errorCode(ErrOperationNotAttempted)
				switch {
				case txnDenied:
					code = codeTxnAuthz
				case !topicOK(auth.OpWrite, t.Topic):
					code = codeTopicAuthz
				}
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.AddOffsetsToTxnRequest:
		switch {
		case !txnOK(r.TransactionalID):
			return whole(func(resp kmsg.Response) { resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = codeTxnAuthz })
		case !groupOK(auth.OpRead, r.Group):
			return whole(func(resp kmsg.Response) { resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = codeGroupAuthz })
		}
	case *kmsg.EndTxnRequest:
		if !txnOK(r.TransactionalID) {
			return whole(func(resp kmsg.Response) { resp.(*kmsg.EndTxnResponse).ErrorCode = codeTxnAuthz })
		}
	case *kmsg.TxnOffsetCommitRequest:
		code := int16(0)
		switch {
		case !txnOK(r.TransactionalID):
			code = codeTxnAuthz
		case !groupOK(auth.OpRead, r.Group):
			code = codeGroupAuthz
		}
		var denied []kmsg.TxnOffsetCommitRequestTopic
		if code != 0 {
			denied, r.Topics = r.Topics, nil
		} else {
			code = codeTopicAuthz
			r.Topics, denied = split(r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return topicOK(auth.OpRead, t.Topic) })
		}
		add := func(resp kmsg.Response) {
			out := resp.(*kmsg.TxnOffsetCommitResponse)
			for _, t := range denied {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		}
		if code != codeTopicAuthz {
			return whole(add)
		}
		return mergeIf(len(denied) > 0, add)
	case *kmsg.DescribeProducersRequest:
		var denied []kmsg.DescribeProducersRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return topicOK(auth.OpRead, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeProducersResponse)
			for _, t := range denied {
				rt := kmsg.NewDescribeProducersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDescribeProducersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, codeTopicAuthz
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.DescribeTransactionsRequest:
		var denied []string
		r.TransactionalIDs, denied = split(r.TransactionalIDs, func(id string) bool {
			return b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, id)
		})
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeTransactionsResponse)
			for _, id := range denied {
				s := kmsg.NewDescribeTransactionsResponseTransactionState()
				s.TransactionalID, s.ErrorCode, s.ProducerID, s.ProducerEpoch = id, codeTxnAuthz, -1, -1
				out.TransactionStates = append(out.TransactionStates, s)
			}
		})
	case *kmsg.ListTransactionsRequest:
		return authzDecision{merge: func(resp kmsg.Response) {
			out := resp.(*kmsg.ListTransactionsResponse)
			out.TransactionStates = slices.DeleteFunc(out.TransactionStates, func(s kmsg.ListTransactionsResponseTransactionState) bool {
				return !b.authorized(req, auth.OpDescribe, auth.ResourceTransactionalID, s.TransactionalID)
			})
		}}
	case *kmsg.OffsetForLeaderEpochRequest:
		if r.Version >= 3 && r.ReplicaID >= 0 {
			if clusterOK(auth.OpClusterAction) {
				return authzDecision{}
			}
			denied := r.Topics
			r.Topics = nil
			return whole(func(resp kmsg.Response) { addEpochDenied(resp, denied) })
		}
		var denied []kmsg.OffsetForLeaderEpochRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return topicOK(auth.OpDescribe, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) { addEpochDenied(resp, denied) })
	default:
		return b.checkAdminRequest(req, topicOK, clusterOK, whole)
	}
	return authzDecision{} // a case above that refused nothing
}

func addEpochDenied(resp kmsg.Response, denied []kmsg.OffsetForLeaderEpochRequestTopic) {
	out := resp.(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range denied {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, codeTopicAuthz, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
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

func mergeIf(cond bool, f func(kmsg.Response)) authzDecision {
	if !cond {
		return authzDecision{}
	}
	return authzDecision{merge: f}
}
