package broker

import (
	"context"
	"fmt"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/internal/testwait"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
)

// addRaftVoterRequest asks for node id to be added with the given Raft address.
func addRaftVoterRequest(id int32, raftAddr string) *kmsg.AddRaftVoterRequest {
	req := kmsg.NewPtrAddRaftVoterRequest()
	req.VoterID, req.TimeoutMillis = id, 10000
	host, port := splitHostPort(raftAddr)
	l := kmsg.NewAddRaftVoterRequestListener()
	l.Name, l.Host, l.Port = raftListenerName, host, uint16(port)
	req.Listeners = append(req.Listeners, l)
	return req
}

// sendAddRaftVoter sends req to addr as an ordinary client ("attacker": not a broker's
// client id), authenticated with PLAIN as user when user is set, and returns the
// response's error code.
func sendAddRaftVoter(t *testing.T, addr, user, password string, req *kmsg.AddRaftVoterRequest) int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var d net.Dialer
	dial := d.DialContext
	if user != "" {
		ib := &interBrokerDialer{listener: "SASL_PLAINTEXT", mechanism: "PLAIN", username: user, password: password}
		dial = ib.dialFunc(dial, "attacker")
	}
	cl, err := rpc.DialWith(ctx, dial, addr, "attacker")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.Do(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.AddRaftVoterResponse).ErrorCode
}

// raftAddresses is the Raft configuration as node id → address.
func raftAddresses(t *testing.T, b *Broker) map[raft.ServerID]raft.ServerAddress {
	t.Helper()
	f := b.raft.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	out := map[raft.ServerID]raft.ServerAddress{}
	for _, s := range f.Configuration().Servers {
		out[s.ID] = s.Address
	}
	return out
}

// TestAddRaftVoter_RefusesAddressRewrite: AddRaftVoter for a node id already in the
// quorum is refused with DUPLICATE_VOTER (Kafka's AddVoterHandler, KIP-853) and the
// configuration does not change. Before, hashicorp/raft's AddNonvoter rewrote the
// voter's address: two unauthenticated requests left a 3-node cluster without a
// controller. A new id at an address a member already has is refused too.
func TestAddRaftVoter_RefusesAddressRewrite(t *testing.T) {
	c := startTestCluster(t, 3, 3, nil)
	var ctrl int32 = -1
	testwait.For(t, 30*time.Second, func() error {
		ctrl = c.brokers[0].ControllerID()
		for _, b := range c.brokers {
			if id := b.ControllerID(); id < 0 || id != ctrl {
				return fmt.Errorf("controller ids %d and %d", ctrl, id)
			}
		}
		return nil
	})
	before := raftAddresses(t, c.brokers[ctrl])
	// Through a node that is not the controller (forwarded), and to the controller.
	entry := c.brokers[(ctrl+1)%3].Addr().String()
	for _, victim := range []int32{(ctrl + 1) % 3, (ctrl + 2) % 3} {
		if code := sendAddRaftVoter(t, entry, "", "", addRaftVoterRequest(victim, "127.0.0.1:1")); code != kerr.DuplicateVoter.Code {
			t.Fatalf("rewriting voter %d's address: %v, want DUPLICATE_VOTER", victim, kerr.ErrorForCode(code))
		}
	}
	if code := sendAddRaftVoter(t, c.brokers[ctrl].Addr().String(), "", "", addRaftVoterRequest(ctrl, "127.0.0.1:1")); code != kerr.DuplicateVoter.Code {
		t.Fatalf("rewriting the controller's address: %v, want DUPLICATE_VOTER", kerr.ErrorForCode(code))
	}
	if code := sendAddRaftVoter(t, entry, "", "", addRaftVoterRequest(9, string(before[serverID((ctrl+1)%3)]))); code != kerr.InvalidRequest.Code {
		t.Fatalf("a new id at a member's address: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	for _, b := range c.brokers {
		after := raftAddresses(t, b)
		if fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("node %d's Raft configuration changed: %v, was %v", b.NodeID(), after, before)
		}
	}
	// The cluster keeps its controller: a topic of replication factor 3 is created.
	adm := newAdmin(t, c.brokers[(ctrl+2)%3])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if resp, err := adm.CreateTopic(ctx, 1, 3, nil, "after"); err != nil || resp.Err != nil {
		t.Fatalf("create after the refused rewrites: %v %v", err, resp.Err)
	}
}

// TestAddRaftVoter_NeedsAlterOnCluster: with authorization on, AddRaftVoter needs
// Alter on the cluster (Kafka's ControllerApis.handleAddRaftVoter). Users without a
// right on the cluster get CLUSTER_AUTHORIZATION_FAILED and the quorum does not change:
// alice has no ACL, erin has Alter on a topic only. A super user passes the check and
// is then refused as a duplicate voter: its request named node 0 at another address,
// which rewrote the only voter's address before.
func TestAddRaftVoter_NeedsAlterOnCluster(t *testing.T) {
	props := saslPlaintextProps()
	props["authorizer.class.name"] = standardAuthorizer
	props["super.users"] = "User:admin;User:broker"
	props[config.RaftSecurityProtocolProperty] = "PLAINTEXT"
	b := startTestBroker(t, "", props)
	addr := b.Addr().String()

	admin := kadm.NewClient(newClient(t, b, kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism())))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := admin.CreateACLs(ctx, kadm.NewACLs().Allow("User:erin").AllowHosts("*").Topics("t").
		Operations(kadm.OpAlter).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	testwait.For(t, 10*time.Second, func() error {
		if len(b.Image().ACLs) == 0 {
			return fmt.Errorf("the ACL is not applied yet")
		}
		return nil
	})

	stranger, err := net.Listen("tcp", "127.0.0.1:0") // where the joiner claims to be
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	for _, u := range []struct{ user, password string }{{"alice", "alice-secret"}, {"erin", "erin-secret"}} {
		code := sendAddRaftVoter(t, addr, u.user, u.password, addRaftVoterRequest(9, stranger.Addr().String()))
		if code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("AddRaftVoter from %s: %v, want CLUSTER_AUTHORIZATION_FAILED", u.user, kerr.ErrorForCode(code))
		}
	}
	before := raftAddresses(t, b)
	if code := sendAddRaftVoter(t, addr, "admin", "admin-secret", addRaftVoterRequest(0, stranger.Addr().String())); code != kerr.DuplicateVoter.Code {
		t.Errorf("AddRaftVoter from admin for node 0: %v, want DUPLICATE_VOTER", kerr.ErrorForCode(code))
	}
	if after := raftAddresses(t, b); len(after) != 1 || after[serverID(0)] != before[serverID(0)] {
		t.Fatalf("the quorum changed: %v, was %v", after, before)
	}
}
