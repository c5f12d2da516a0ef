package broker

// Controller-side behaviour of P17's registration and fencing rules, on one in-process
// broker (the controller) with fake brokers registered through its handlers: their
// "processes" are listeners this test owns, so it decides whether a probe connects,
// is refused or gets no answer.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/controller"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errUnreachable is what the test's dialer answers for an address that neither accepts
// nor refuses (a host that is down or cut off).
var errUnreachable = errors.New("test: no route to host")

// startFencingTestBroker starts a one-node broker (its own controller) whose dials to
// unreachable fail without a refusal.
func startFencingTestBroker(t *testing.T, unreachable string) *Broker {
	t.Helper()
	var d net.Dialer
	return startReadyBroker(t, Config{
		NodeID: 0, DataDir: t.TempDir(), Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0",
		// Sessions never expire during the test: only evidence fences.
		Properties: map[string]string{"broker.session.timeout.ms": "600000"},
		Logger:     hclog.New(&hclog.LoggerOptions{Output: newTestLogWriter(t, "node-0 "), Level: hclog.Info}),
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == unreachable {
				return nil, errUnreachable
			}
			return d.DialContext(ctx, network, addr)
		},
	})
}

// fakeBroker registers broker id (incarnation inc, naming previous) with b's controller
// at addr and returns the answer.
func fakeRegistration(t *testing.T, b *Broker, id int32, inc, previous metadata.Uuid, addr string) *kmsg.BrokerRegistrationResponse {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version, req.BrokerID, req.ClusterID, req.IncarnationID = 2, id, b.Image().ClusterID, inc
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", host, uint16(p)
	req.Listeners = append(req.Listeners, l)
	addSupportedFeatures(req)
	if previous != metadata.ZeroUuid {
		req.UnknownTags.Set(previousIncarnationTag, previous[:])
	}
	return b.brokerRegistration(testContext(t), req)
}

// fakeUnfence heartbeats broker id at epoch, caught up, until it is unfenced.
func fakeUnfence(t *testing.T, b *Broker, id int32, epoch int64) {
	t.Helper()
	testwait.For(t, 10*time.Second, func() error {
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.Version, hb.BrokerID, hb.BrokerEpoch, hb.CurrentMetadataOffset = 1, id, epoch, int64(b.Image().Offset)
		resp := b.brokerHeartbeat(testContext(t), hb)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		if resp.IsFenced {
			return fmt.Errorf("broker %d still fenced", id)
		}
		return nil
	})
}

// listen opens a listener that accepts (the kernel's backlog is enough) and is closed
// at cleanup.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// A restarted broker that names its registered incarnation replaces it at once, even
// while that incarnation's session is valid; the old incarnation is fenced in the same
// entry (out of its leaderships, at a new leader epoch). Naming nothing, or another
// incarnation, is DUPLICATE_BROKER_REGISTRATION, as in Kafka.
func TestRegistrationReplacesTheNamedIncarnation(t *testing.T) {
	b := startFencingTestBroker(t, "")
	addr := listen(t).Addr().String()
	incA := metadata.UuidFromBytes([16]byte{0xa})
	resp := fakeRegistration(t, b, 5, incA, metadata.ZeroUuid, addr)
	if resp.ErrorCode != 0 {
		t.Fatalf("first registration: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	epochA := resp.BrokerEpoch
	fakeUnfence(t, b, 5, epochA)
	// A partition led by broker 5.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "on-five", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Replicas = []int32{5}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	ct.Topics = append(ct.Topics, rt)
	if cr := b.createTopics(testContext(t), ct); cr.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(cr.Topics[0].ErrorCode))
	}
	before := *b.Image().Topic("on-five").Partitions[0]
	if before.Leader != 5 {
		t.Fatalf("partition led by %d, want 5", before.Leader)
	}

	incB := metadata.UuidFromBytes([16]byte{0xb})
	for name, previous := range map[string]metadata.Uuid{
		"naming nothing (another directory)": metadata.ZeroUuid,
		"naming another incarnation":         metadata.UuidFromBytes([16]byte{0xc}),
	} {
		if resp := fakeRegistration(t, b, 5, incB, previous, addr); resp.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
			t.Fatalf("%s: %v, want DUPLICATE_BROKER_REGISTRATION", name, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if br := b.Image().Brokers[5]; br.IncarnationID != incA || br.Fenced {
		t.Fatalf("a refused registration changed broker 5: %+v", br)
	}

	resp = fakeRegistration(t, b, 5, incB, incA, addr)
	if resp.ErrorCode != 0 {
		t.Fatalf("registration naming the registered incarnation: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	im := b.Image()
	br := im.Brokers[5]
	if br.IncarnationID != incB || !br.Fenced || br.Epoch != resp.BrokerEpoch || br.Epoch <= epochA {
		t.Fatalf("broker 5 after the replacement: %+v (answered epoch %d, old epoch %d)", br, resp.BrokerEpoch, epochA)
	}
	p := im.Topic("on-five").Partitions[0]
	if p.Leader != -1 || p.LeaderEpoch != before.LeaderEpoch+1 {
		t.Fatalf("the replaced incarnation's partition: leader %d epoch %d, was %d epoch %d; want no leader at the next epoch",
			p.Leader, p.LeaderEpoch, before.Leader, before.LeaderEpoch)
	}
	// The new incarnation catches up and leads again, at a new epoch.
	fakeUnfence(t, b, 5, resp.BrokerEpoch)
	if p := b.Image().Topic("on-five").Partitions[0]; p.Leader != 5 || p.LeaderEpoch != before.LeaderEpoch+2 {
		t.Fatalf("after the new incarnation's unfence: leader %d epoch %d", p.Leader, p.LeaderEpoch)
	}
}

// waitProbed waits until the controller has a finished probe of broker id at epoch.
func waitProbed(t *testing.T, b *Broker, id int32, epoch int64) controller.ProbeResult {
	t.Helper()
	var res controller.ProbeResult
	testwait.For(t, 10*time.Second, func() error {
		var ok bool
		if res, ok = b.ctrl.LastProbe(id, epoch); !ok {
			return fmt.Errorf("broker %d not probed yet", id)
		}
		return nil
	})
	return res
}

// Reports of refused connections fence a broker only on evidence: a probe the broker's
// listener refuses, or, when the probe gets no answer, reports from a majority of its
// peers. A listener that accepts (a live or paused process) is never fenced on reports,
// and one reporter alone cannot fence a broker the controller cannot reach.
func TestRefusalReportsFenceOnlyOnEvidence(t *testing.T) {
	unreachable := "127.0.0.1:1" // the test dialer answers errUnreachable for it
	b := startFencingTestBroker(t, unreachable)
	alive := listen(t)
	dead := listen(t)
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there now: connections are refused
	epochs := map[int32]int64{}
	for id, addr := range map[int32]string{5: alive.Addr().String(), 6: deadAddr, 7: unreachable, 8: listen(t).Addr().String()} {
		resp := fakeRegistration(t, b, id, metadata.UuidFromBytes([16]byte{byte(id)}), metadata.ZeroUuid, addr)
		if resp.ErrorCode != 0 {
			t.Fatalf("register %d: %v", id, kerr.ErrorForCode(resp.ErrorCode))
		}
		epochs[id] = resp.BrokerEpoch
		fakeUnfence(t, b, id, resp.BrokerEpoch)
	}
	fenced := func(id int32) bool { return b.Image().Brokers[id].Fenced }

	// A listener that accepts: the report is false (or the process is paused).
	b.ctrl.RefusedPeersReported(8, []peerRefusal{{BrokerID: 5, BrokerEpoch: epochs[5]}})
	if res := waitProbed(t, b, 5, epochs[5]); res != controller.ProbeConnected || fenced(5) {
		t.Fatalf("broker 5 (listening): probe %s, fenced %v", res, fenced(5))
	}

	// A refused probe fences at once.
	b.ctrl.RefusedPeersReported(8, []peerRefusal{{BrokerID: 6, BrokerEpoch: epochs[6]}})
	if res := waitProbed(t, b, 6, epochs[6]); res != controller.ProbeRefused {
		t.Fatalf("broker 6 (nothing listening): probe %s", res)
	}
	testwait.For(t, 10*time.Second, func() error {
		if !fenced(6) {
			return errors.New("broker 6 not fenced")
		}
		return nil
	})

	// A report about an old incarnation changes nothing.
	b.ctrl.RefusedPeersReported(8, []peerRefusal{{BrokerID: 5, BrokerEpoch: epochs[5] - 1}})
	if _, ok := b.ctrl.LastProbe(5, epochs[5]-1); ok {
		t.Fatal("a report about an old incarnation was probed")
	}

	// Unreachable: peers of 7 are 0, 5 and 8 (6 is fenced). One reporter is not a
	// majority; a second one is.
	b.ctrl.RefusedPeersReported(0, []peerRefusal{{BrokerID: 7, BrokerEpoch: epochs[7]}})
	if res := waitProbed(t, b, 7, epochs[7]); res != controller.ProbeUnanswered || fenced(7) {
		t.Fatalf("broker 7 (unreachable), one reporter: probe %s, fenced %v", res, fenced(7))
	}
	b.ctrl.RefusedPeersReported(8, []peerRefusal{{BrokerID: 7, BrokerEpoch: epochs[7]}})
	testwait.For(t, 10*time.Second, func() error {
		if !fenced(7) {
			return errors.New("broker 7 not fenced by two of its three peers' reports")
		}
		return nil
	})
	if fenced(5) || fenced(8) {
		t.Fatalf("a live broker was fenced: 5 %v, 8 %v", fenced(5), fenced(8))
	}
}
