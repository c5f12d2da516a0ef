package broker

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/petrel-broker/petrel/controller"
)

// TestAPIHooks_RoutingFacts pins the facts each API's file sets in its init
// (apiOpts) to the APIs Kafka's rules name: the controller APIs (handled in process on
// the controller, forwarded there by every other broker), the APIs whose controller
// answer waits for every broker to apply the change, those whose forward waits for
// the request's own timeout, those on the broker-session connection, and those
// answered per partition when the readiness wait ends. A fact dropped from a file
// fails here, not in a cluster.
func TestAPIHooks_RoutingFacts(t *testing.T) {
	want := map[string][]kmsg.Key{
		"controller": {kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AddRaftVoter, kmsg.RemoveRaftVoter,
			kmsg.UnregisterBroker, kmsg.AlterPartition, kmsg.DescribeQuorum, kmsg.CreateTopics, kmsg.DeleteTopics,
			kmsg.AllocateProducerIDs, kmsg.AlterPartitionAssignments, kmsg.AssignReplicasToDirs, kmsg.CreatePartitions,
			kmsg.IncrementalAlterConfigs, kmsg.AlterConfigs, kmsg.ElectLeaders, kmsg.CreateACLs, kmsg.DeleteACLs,
			kmsg.AlterClientQuotas, kmsg.AlterUserSCRAMCredentials, kmsg.UpdateFeatures, kmsg.Key(remoteLogSegmentsKey)},
		// Every controller API: a forward answered NOT_CONTROLLER is sent again.
		"isNotController": {kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AddRaftVoter, kmsg.RemoveRaftVoter,
			kmsg.UnregisterBroker, kmsg.AlterPartition, kmsg.DescribeQuorum, kmsg.CreateTopics, kmsg.DeleteTopics,
			kmsg.AllocateProducerIDs, kmsg.AlterPartitionAssignments, kmsg.AssignReplicasToDirs, kmsg.CreatePartitions,
			kmsg.IncrementalAlterConfigs, kmsg.AlterConfigs, kmsg.ElectLeaders, kmsg.CreateACLs, kmsg.DeleteACLs,
			kmsg.AlterClientQuotas, kmsg.AlterUserSCRAMCredentials, kmsg.UpdateFeatures, kmsg.Key(remoteLogSegmentsKey)},
		"adminChange": {kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions, kmsg.IncrementalAlterConfigs,
			kmsg.AlterConfigs, kmsg.CreateACLs, kmsg.DeleteACLs, kmsg.AlterClientQuotas, kmsg.AlterUserSCRAMCredentials,
			kmsg.AlterPartitionAssignments, kmsg.ElectLeaders, kmsg.UnregisterBroker, kmsg.UpdateFeatures},
		"ownTimeout":      {kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions, kmsg.ElectLeaders, kmsg.AlterPartitionAssignments, kmsg.UpdateFeatures},
		"sessionConn":     {kmsg.BrokerRegistration, kmsg.BrokerHeartbeat},
		"partitionScoped": {kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.OffsetForLeaderEpoch, kmsg.DeleteRecords},
	}
	got := map[string][]kmsg.Key{}
	for _, a := range apis {
		for fact, set := range map[string]bool{"controller": a.controller != nil, "isNotController": a.isNotController != nil,
			"adminChange": a.adminChange, "ownTimeout": a.ownTimeout, "sessionConn": a.sessionConn, "partitionScoped": a.partitionScoped} {
			if set {
				got[fact] = append(got[fact], a.key)
			}
		}
	}
	for _, fact := range slices.Sorted(maps.Keys(want)) {
		if w, g := keyNames(want[fact]), keyNames(got[fact]); w != g {
			t.Errorf("%s:\n got %s\nwant %s", fact, g, w)
		}
	}
}

func keyNames(keys []kmsg.Key) string {
	var s []string
	for _, k := range keys {
		s = append(s, k.Name())
	}
	slices.Sort(s)
	return strings.Join(s, " ")
}

// TestAPIHooks_NotControllerRoundTrip: the NOT_CONTROLLER answer a broker gives for
// each controller API (a forward that found no controller) names every resource of the
// request, and where the API reads answers as NOT_CONTROLLER, forwarding reads this
// one so (and sends the request again rather than hand it back to the client).
func TestAPIHooks_NotControllerRoundTrip(t *testing.T) {
	for _, a := range apis {
		if a.controller == nil {
			continue
		}
		req := rpc.RequestForKey(int16(a.key))
		switch r := req.(type) {
		case *kmsg.CreateTopicsRequest:
			r.Topics = append(r.Topics, kmsg.NewCreateTopicsRequestTopic())
		case *kmsg.DeleteTopicsRequest:
			r.TopicNames = append(r.TopicNames, "t")
		case *kmsg.CreateACLsRequest:
			r.Creations = append(r.Creations, kmsg.NewCreateACLsRequestCreation())
		case *kmsg.DeleteACLsRequest:
			r.Filters = append(r.Filters, kmsg.NewDeleteACLsRequestFilter())
		case *kmsg.AlterConfigsRequest:
			r.Resources = append(r.Resources, kmsg.NewAlterConfigsRequestResource())
		case *kmsg.IncrementalAlterConfigsRequest:
			r.Resources = append(r.Resources, kmsg.NewIncrementalAlterConfigsRequestResource())
		case *kmsg.CreatePartitionsRequest:
			r.Topics = append(r.Topics, kmsg.NewCreatePartitionsRequestTopic())
		case *kmsg.AlterClientQuotasRequest:
			r.Entries = append(r.Entries, kmsg.NewAlterClientQuotasRequestEntry())
		case *kmsg.AlterUserSCRAMCredentialsRequest:
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name = "u"
			r.Deletions = append(r.Deletions, d)
		case *kmsg.ElectLeadersRequest:
			r.Version = 1 // the top-level error code
		}
		resp := notControllerResponse(req, controller.ErrNotController)
		if resp.Key() != int16(a.key) {
			t.Fatalf("%s: answered with a %s", a.key.Name(), kmsg.NameForKey(resp.Key()))
		}
		// Every controller API reads its NOT_CONTROLLER answer as one, so that a broker
		// forwarding it while the controller moves sends it again instead of handing
		// NOT_CONTROLLER back to the client.
		if a.isNotController == nil || !isNotController(resp) {
			t.Errorf("%s: its NOT_CONTROLLER answer is not read as one: %+v", a.key.Name(), resp)
		}
	}
	if isNotController(kmsg.NewPtrMetadataResponse()) {
		t.Error("a Metadata answer read as NOT_CONTROLLER")
	}
}

// TestRegisterAPI_RefusesAnAPIWithoutItsFacts: an API cannot be added without an
// authorization rule, nor a controller API without its NOT_CONTROLLER answer, nor an API
// twice: the package does not start (init panics).
func TestRegisterAPI_RefusesAnAPIWithoutItsFacts(t *testing.T) {
	n := len(apis)
	for name, spec := range map[string]*apiSpec{
		"without an authorization rule":     {key: kmsg.Envelope},
		"without its NOT_CONTROLLER answer": {key: kmsg.Envelope, apiOpts: apiOpts{authorize: authorizeNothing, controller: noController}},
		"twice":                             {key: kmsg.Produce, apiOpts: apiOpts{authorize: authorizeNothing}},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), name) {
					t.Errorf("registered %s: %v", name, r)
				}
			}()
			addAPI(spec)
		}()
	}
	if len(apis) != n || apiFor(int16(kmsg.Envelope)) != nil {
		t.Fatal("a refused API was registered")
	}
}

func noController(*Broker, context.Context, kmsg.Request) kmsg.Response { return nil }
