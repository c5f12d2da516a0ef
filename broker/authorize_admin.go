package broker

// The checks of the admin and internal APIs (authorize_apis.go): topics, configs,
// partitions, records, elections, reassignments, log dirs, ACLs, quotas, and the
// APIs brokers send each other (ClusterAction).

import (
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) checkAdminRequest(req *rpc.Request, topicOK opCheck, clusterOK func(auth.Operation) bool,
	whole func(func(kmsg.Response)) authzDecision) authzDecision {
	clusterOnly := func(op auth.Operation, fill func(kmsg.Response)) authzDecision {
		if clusterOK(op) {
			return authzDecision{}
		}
		return whole(fill)
	}
	switch r := req.Body.(type) {
	case *kmsg.CreateTopicsRequest:
		if clusterOK(auth.OpCreate) {
			return authzDecision{}
		}
		var denied []kmsg.CreateTopicsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return topicOK(auth.OpCreate, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.CreateTopicsResponse)
			for _, t := range denied {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic, rt.ErrorCode, rt.NumPartitions, rt.ReplicationFactor = t.Topic, codeTopicAuthz, -1, -1
				rt.ErrorMessage = errorMessage(ErrTopicAuthorizationFailed)
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.DeleteTopicsRequest:
		im := b.Image()
		ok := func(name *string, id [16]byte) bool {
			n := ""
			switch {
			case name != nil:
				n = *name
			case im.TopicByID(metadata.Uuid(id)) != nil:
				n = im.TopicByID(metadata.Uuid(id)).Name
			default:
				return true // unknown id: the handler's answer
			}
			return topicOK(auth.OpDelete, n)
		}
		var deniedNames []string
		var deniedTopics []kmsg.DeleteTopicsRequestTopic
		r.TopicNames, deniedNames = split(r.TopicNames, func(n string) bool { return ok(&n, [16]byte{}) })
		r.Topics, deniedTopics = split(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool { return ok(t.Topic, t.TopicID) })
		return mergeIf(len(deniedNames)+len(deniedTopics) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteTopicsResponse)
			for _, n := range deniedNames {
				deniedTopics = append(deniedTopics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(n)})
			}
			for _, t := range deniedTopics {
				rt := kmsg.NewDeleteTopicsResponseTopic()
				rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, codeTopicAuthz
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.DeleteRecordsRequest:
		var denied []kmsg.DeleteRecordsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return topicOK(auth.OpDelete, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteRecordsResponse)
			for _, t := range denied {
				rt := kmsg.NewDeleteRecordsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDeleteRecordsResponseTopicPartition()
					rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, codeTopicAuthz
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.CreatePartitionsRequest:
		var denied []kmsg.CreatePartitionsRequestTopic
		r.Topics, denied = split(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return topicOK(auth.OpAlter, t.Topic) })
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.CreatePartitionsResponse)
			for _, t := range denied {
				rt := kmsg.NewCreatePartitionsResponseTopic()
				rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, codeTopicAuthz, errorMessage(ErrTopicAuthorizationFailed)
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.DescribeConfigsRequest:
		var denied []kmsg.DescribeConfigsRequestResource
		r.Resources, denied = split(r.Resources, func(res kmsg.DescribeConfigsRequestResource) bool {
			return configResourceOK(res.ResourceType, res.ResourceName, auth.OpDescribeConfigs, topicOK, clusterOK)
		})
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeConfigsResponse)
			for _, res := range denied {
				rr := kmsg.NewDescribeConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, configDeniedCode(res.ResourceType)
				out.Resources = append(out.Resources, rr)
			}
		})
	case *kmsg.AlterConfigsRequest:
		var denied []kmsg.AlterConfigsRequestResource
		r.Resources, denied = split(r.Resources, func(res kmsg.AlterConfigsRequestResource) bool {
			return configResourceOK(res.ResourceType, res.ResourceName, auth.OpAlterConfigs, topicOK, clusterOK)
		})
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.AlterConfigsResponse)
			for _, res := range denied {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, configDeniedCode(res.ResourceType)
				out.Resources = append(out.Resources, rr)
			}
		})
	case *kmsg.IncrementalAlterConfigsRequest:
		var denied []kmsg.IncrementalAlterConfigsRequestResource
		r.Resources, denied = split(r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) bool {
			return configResourceOK(res.ResourceType, res.ResourceName, auth.OpAlterConfigs, topicOK, clusterOK)
		})
		return mergeIf(len(denied) > 0, func(resp kmsg.Response) {
			out := resp.(*kmsg.IncrementalAlterConfigsResponse)
			for _, res := range denied {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, configDeniedCode(res.ResourceType)
				out.Resources = append(out.Resources, rr)
			}
		})
	case *kmsg.ElectLeadersRequest:
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			out := resp.(*kmsg.ElectLeadersResponse)
			out.ErrorCode = codeClusterAuthz
			for _, t := range r.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, codeClusterAuthz
					rt.Partitions = append(rt.Partitions, rp)
				}
				out.Topics = append(out.Topics, rt)
			}
		})
	case *kmsg.AlterPartitionAssignmentsRequest:
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			resp.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.ListPartitionReassignmentsRequest:
		return clusterOnly(auth.OpDescribe, func(resp kmsg.Response) {
			resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.DescribeLogDirsRequest:
		return clusterOnly(auth.OpDescribe, func(resp kmsg.Response) {
			resp.(*kmsg.DescribeLogDirsResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.DescribeQuorumRequest:
		return clusterOnly(auth.OpDescribe, func(resp kmsg.Response) {
			resp.(*kmsg.DescribeQuorumResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.DescribeACLsRequest:
		return clusterOnly(auth.OpDescribe, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeACLsResponse)
			out.ErrorCode, out.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
		})
	case *kmsg.CreateACLsRequest:
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			out := resp.(*kmsg.CreateACLsResponse)
			for range r.Creations {
				res := kmsg.NewCreateACLsResponseResult()
				res.ErrorCode, res.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
				out.Results = append(out.Results, res)
			}
		})
	case *kmsg.DeleteACLsRequest:
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			out := resp.(*kmsg.DeleteACLsResponse)
			for range r.Filters {
				res := kmsg.NewDeleteACLsResponseResult()
				res.ErrorCode, res.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
				out.Results = append(out.Results, res)
			}
		})
	case *kmsg.DescribeClientQuotasRequest:
		return clusterOnly(auth.OpDescribeConfigs, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeClientQuotasResponse)
			out.ErrorCode, out.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
		})
	case *kmsg.AlterClientQuotasRequest:
		return clusterOnly(auth.OpAlterConfigs, func(resp kmsg.Response) {
			out := resp.(*kmsg.AlterClientQuotasResponse)
			for _, e := range r.Entries {
				re := kmsg.NewAlterClientQuotasResponseEntry()
				re.ErrorCode, re.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
				for _, part := range e.Entity {
					rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
					rp.Type, rp.Name = part.Type, part.Name
					re.Entity = append(re.Entity, rp)
				}
				out.Entries = append(out.Entries, re)
			}
		})
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		return clusterOnly(auth.OpDescribe, func(resp kmsg.Response) {
			out := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
			out.ErrorCode, out.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
		})
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			out := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
			users := map[string]bool{}
			add := func(user string) {
				if users[user] {
					return
				}
				users[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode, res.ErrorMessage = user, codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
				out.Results = append(out.Results, res)
			}
			for _, d := range r.Deletions {
				add(d.Name)
			}
			for _, u := range r.Upsertions {
				add(u.Name)
			}
		})
	case *kmsg.BrokerRegistrationRequest:
		return clusterOnly(auth.OpClusterAction, func(resp kmsg.Response) {
			resp.(*kmsg.BrokerRegistrationResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.BrokerHeartbeatRequest:
		return clusterOnly(auth.OpClusterAction, func(resp kmsg.Response) {
			resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.AlterPartitionRequest:
		return clusterOnly(auth.OpClusterAction, func(resp kmsg.Response) {
			resp.(*kmsg.AlterPartitionResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.AllocateProducerIDsRequest:
		return clusterOnly(auth.OpClusterAction, func(resp kmsg.Response) {
			resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.AddRaftVoterRequest: // Alter, as Kafka's ControllerApis (brokers hold ClusterAction, which implies every right)
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			resp.(*kmsg.AddRaftVoterResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.RemoveRaftVoterRequest: // Alter, as Kafka's ControllerApis
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			out := resp.(*kmsg.RemoveRaftVoterResponse)
			out.ErrorCode, out.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
		})
	case *kmsg.UnregisterBrokerRequest: // Alter, as Kafka's ControllerApis
		return clusterOnly(auth.OpAlter, func(resp kmsg.Response) {
			out := resp.(*kmsg.UnregisterBrokerResponse)
			out.ErrorCode, out.ErrorMessage = codeClusterAuthz, errorMessage(ErrClusterAuthorizationFailed)
		})
	case *kmsg.WriteTxnMarkersRequest:
		return clusterOnly(auth.OpClusterAction, func(resp kmsg.Response) {
			out := resp.(*kmsg.WriteTxnMarkersResponse)
			for _, m := range r.Markers {
				rm := kmsg.NewWriteTxnMarkersResponseMarker()
				rm.ProducerID = m.ProducerID
				for _, t := range m.Topics {
					rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
						rp.Partition, rp.ErrorCode = p, codeClusterAuthz
						rt.Partitions = append(rt.Partitions, rp)
					}
					rm.Topics = append(rm.Topics, rt)
				}
				out.Markers = append(out.Markers, rm)
			}
		})
	case *kmsg.AssignReplicasToDirsRequest:
		return clusterOnly(auth.OpClusterAction, func(resp kmsg.Response) {
			resp.(*kmsg.AssignReplicasToDirsResponse).ErrorCode = codeClusterAuthz
		})
	case *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest, *kmsg.DescribeClusterRequest:
		// None, as in Kafka: the SASL exchange comes before there is a principal, and
		// DescribeCluster names only brokers (its cluster authorized operations are
		// filled for the principal).
		return authzDecision{}
	default:
		// An API without a rule is refused (the registry test keeps this unreachable).
		return authzDecision{close: fmt.Errorf("%w: api key %d", errNoAuthorizationRule, req.Key)}
	}
}

// errNoAuthorizationRule closes the connection of a request whose API has no rule.
var errNoAuthorizationRule = fmt.Errorf("%w: the api has no authorization rule", ErrClusterAuthorizationFailed)

// configResourceOK checks op on a config resource: a topic, or a broker (and broker
// loggers) through the cluster resource.
func configResourceOK(t kmsg.ConfigResourceType, name string, op auth.Operation, topicOK opCheck, clusterOK func(auth.Operation) bool) bool {
	if t == kmsg.ConfigResourceTypeTopic {
		return topicOK(op, name)
	}
	return clusterOK(op)
}

func configDeniedCode(t kmsg.ConfigResourceType) int16 {
	if t == kmsg.ConfigResourceTypeTopic {
		return codeTopicAuthz
	}
	return codeClusterAuthz
}

// securityNotController fills the NOT_CONTROLLER answer of the ACL and quota writes.
func securityNotController(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	switch r := resp.(type) {
	case *kmsg.CreateACLsResponse:
		for range req.(*kmsg.CreateACLsRequest).Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, errorMessage(cause)
			r.Results = append(r.Results, res)
		}
	case *kmsg.DeleteACLsResponse:
		for range req.(*kmsg.DeleteACLsRequest).Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, errorMessage(cause)
			r.Results = append(r.Results, res)
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range req.(*kmsg.AlterClientQuotasRequest).Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode, re.ErrorMessage = code, errorMessage(cause)
			for _, part := range e.Entity {
				rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
				rp.Type, rp.Name = part.Type, part.Name
				re.Entity = append(re.Entity, rp)
			}
			r.Entries = append(r.Entries, re)
		}
	}
}
