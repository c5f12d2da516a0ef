package group

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The consumer group against simulated clients: random joins, leaves (static ones
// temporary too), heartbeats acknowledging revocations late or never, lost
// responses, subscription changes, topics created and grown, and expirations. After
// every step no partition is with two members (on the coordinator's side, and among
// the clients that think they own it), and no member epoch passes the group epoch; once
// the changes stop and the clients heartbeat and acknowledge, the group converges to
// its target within a bounded number of rounds.

// simClient is a consumer as the coordinator sees it through its heartbeats.
type simClient struct {
	memberID, instanceID string
	joined               bool
	epoch                int32
	subs                 []string
	// owned are the partitions the client works on; latest the last assignment it got.
	owned, latest AssignedPartitions
	// rejoins counts static rejoins under a new member id.
	rejoins int
	// full: the last response was lost, so the next heartbeat is a full one (as the
	// Java client sends after an error), which brings the whole assignment back.
	full bool
}

type consumerSim struct {
	t       *testing.T
	r       *rand.Rand
	h       *cgHarness
	clients []*simClient
	names   []string
}

const convergeRounds = 4

func TestConsumerGroupProperty(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newConsumerSim(t, seed)
			for step := 0; step < 250; step++ {
				s.step()
				s.checkClients(fmt.Sprintf("step %d", step))
			}
			s.converge()
			s.h.checkReplay()
		})
	}
}

func newConsumerSim(t *testing.T, seed uint64) *consumerSim {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	topics := ConsumerTopicMap{}
	names := []string{"a", "b", "c", "d"}
	for i, n := range names {
		if i == 0 || r.IntN(3) > 0 {
			topics[n] = AssignorTopic{ID: testTopicID(i + 1), Name: n, Partitions: 1 + r.Int32N(8)}
		}
	}
	h := newCG(t, testConsumerConfig(), topics)
	h.noReplay = true
	s := &consumerSim{t: t, r: r, h: h, names: names}
	for i := range 2 + r.IntN(6) {
		c := &simClient{memberID: fmt.Sprintf("c%d", i), owned: AssignedPartitions{}, latest: AssignedPartitions{}}
		if r.IntN(3) == 0 {
			c.instanceID = fmt.Sprintf("i%d", i)
		}
		c.subs = s.randomSubs()
		s.clients = append(s.clients, c)
	}
	return s
}

func (s *consumerSim) randomSubs() []string {
	var subs []string
	for _, n := range s.names {
		if s.r.IntN(2) == 0 {
			subs = append(subs, n)
		}
	}
	if len(subs) == 0 {
		subs = []string{"a"}
	}
	return subs
}

func (s *consumerSim) pick(joined bool) *simClient {
	var cs []*simClient
	for _, c := range s.clients {
		if c.joined == joined {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	return cs[s.r.IntN(len(cs))]
}

func (s *consumerSim) step() {
	switch x := s.r.IntN(100); {
	case x < 45:
		if c := s.pick(true); c != nil {
			s.heartbeat(c, s.r.IntN(3) > 0, s.r.IntN(10) > 0, false)
		}
	case x < 55:
		if c := s.pick(false); c != nil {
			s.join(c)
		}
	case x < 62:
		if c := s.pick(true); c != nil {
			s.leave(c)
		}
	case x < 70:
		if c := s.pick(true); c != nil {
			c.subs = s.randomSubs()
			s.heartbeat(c, true, true, false)
		}
	case x < 75:
		n := s.names[s.r.IntN(len(s.names))]
		t, ok := s.h.topics[n]
		if !ok {
			t = AssignorTopic{ID: testTopicID(slices.Index(s.names, n) + 1), Name: n}
		}
		t.Partitions += 1 + s.r.Int32N(3)
		s.h.topics[n] = t
	case x < 90:
		s.h.now = s.h.now.Add(time.Duration(1+s.r.IntN(20)) * time.Second)
		s.expire()
	default:
		if c := s.pick(true); c != nil {
			s.heartbeat(c, true, true, true)
		}
	}
}

// heartbeat sends c's heartbeat; ack finishes its pending revocations first, report
// sends its owned partitions (else null), lost drops the response.
func (s *consumerSim) heartbeat(c *simClient, ack, report, lost bool) {
	if ack {
		c.owned = cloneAssignment(c.latest)
	}
	var owned AssignedPartitions
	if report || c.full {
		owned = c.owned
	}
	req := cgHBRequest(c.memberID, c.epoch, owned)
	req.SubscribedTopicNames = slices.Clone(c.subs)
	if c.full {
		req.RebalanceTimeoutMillis = 30_000
	}
	if c.instanceID != "" {
		staticReq(req, c.instanceID)
	}
	resp := s.h.send(req)
	c.full = lost
	if lost {
		return
	}
	if resp.ErrorCode != 0 {
		switch resp.ErrorCode {
		case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code, kerr.FencedInstanceID.Code:
		default:
			s.t.Fatalf("heartbeat of %s: %v %s", c.memberID, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
		}
		s.drop(c)
		return
	}
	s.take(c, resp.MemberEpoch, respAssignment(resp))
}

// take applies a response: the client starts on new partitions at once and lets go of
// revoked ones when it acknowledges.
func (s *consumerSim) take(c *simClient, epoch int32, a AssignedPartitions) {
	c.epoch = epoch
	if a == nil {
		return
	}
	c.latest = a
	for t, ps := range a {
		for _, p := range ps {
			assignmentAdd(c.owned, t, p)
		}
	}
}

func (s *consumerSim) drop(c *simClient) {
	c.joined = false
	c.epoch = 0
	c.owned, c.latest = AssignedPartitions{}, AssignedPartitions{}
}

func (s *consumerSim) join(c *simClient) {
	req := cgJoinRequest(c.memberID, c.subs...)
	if c.instanceID != "" {
		staticReq(req, c.instanceID)
	}
	resp := s.h.send(req)
	switch resp.ErrorCode {
	case 0:
		c.joined = true
		s.take(c, resp.MemberEpoch, respAssignment(resp))
	case kerr.UnreleasedInstanceID.Code:
	default:
		s.t.Fatalf("join of %s: %v %s", c.memberID, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
	}
}

func (s *consumerSim) leave(c *simClient) {
	epoch := LeaveMemberEpoch
	req := cgHBRequest(c.memberID, epoch, nil)
	if c.instanceID != "" {
		staticReq(req, c.instanceID)
		if s.r.IntN(2) == 0 {
			req.MemberEpoch = LeaveStaticMemberEpoch
		}
	}
	resp := s.h.send(req)
	if resp.ErrorCode != 0 && resp.ErrorCode != kerr.UnknownMemberID.Code && resp.ErrorCode != kerr.FencedInstanceID.Code {
		s.t.Fatalf("leave of %s: %v", c.memberID, kerr.ErrorForCode(resp.ErrorCode))
	}
	s.drop(c)
	if req.MemberEpoch == LeaveStaticMemberEpoch {
		// The instance comes back under a new member id.
		c.rejoins++
		c.memberID = fmt.Sprintf("%s.%d", c.instanceID, c.rejoins)
	}
}

// expire runs the timers; a client whose member is gone stops (it would learn so on
// its next heartbeat, and a zombie's work is what the fencing is for).
func (s *consumerSim) expire() {
	for _, ev := range s.h.expire() {
		if rm, ok := ev.(ConsumerMemberRemoved); ok {
			for _, c := range s.clients {
				if c.memberID == rm.MemberID {
					s.drop(c)
				}
			}
		}
	}
}

// checkClients asserts that no two clients work on the same partition.
func (s *consumerSim) checkClients(when string) {
	s.t.Helper()
	seen := map[consumerTP]string{}
	for _, c := range s.clients {
		for t, ps := range c.owned {
			for _, p := range ps {
				tp := consumerTP{t, p}
				if other, dup := seen[tp]; dup {
					s.t.Fatalf("%s: partition %x-%d worked on by %s and %s", when, t[15], p, other, c.memberID)
				}
				seen[tp] = c.memberID
			}
		}
	}
}

// converge lets absent members time out while the others heartbeat, then runs
// convergeRounds rounds of heartbeats that acknowledge everything, and checks that
// every subscribed partition is with exactly one member, the one the target says.
func (s *consumerSim) converge() {
	for range 11 {
		s.h.now = s.h.now.Add(5 * time.Second)
		for _, c := range s.clients {
			if c.joined {
				s.heartbeat(c, true, true, false)
			}
		}
		s.expire()
		s.checkClients("timing out")
	}
	for _, c := range s.clients {
		if !c.joined {
			s.join(c)
		}
	}
	for round := 0; round < convergeRounds; round++ {
		for _, c := range s.clients {
			if c.joined {
				s.heartbeat(c, true, true, false)
			}
		}
		s.checkClients(fmt.Sprintf("round %d", round))
	}
	g := s.h.g
	if g.State() != ConsumerGroupStable {
		s.dump()
		s.t.Fatalf("group %v after %d rounds", g.State(), convergeRounds)
	}
	subscribed := map[string]bool{}
	for _, c := range s.clients {
		if !c.joined {
			continue
		}
		v, ok := g.Member(c.memberID)
		if !ok || v.MemberEpoch != g.TargetAssignmentEpoch() || !assignmentsEqual(v.Assigned, v.Target) ||
			!assignmentsEqual(c.owned, v.Assigned) {
			s.dump()
			s.t.Fatalf("client %s owns %v, member %+v", c.memberID, c.owned, v)
		}
		for _, n := range c.subs {
			subscribed[n] = true
		}
	}
	for n := range subscribed {
		t, ok := s.h.topics[n]
		if !ok {
			continue
		}
		for p := range t.Partitions {
			if _, ok := g.owners[consumerTP{t.ID, p}]; !ok {
				s.dump()
				s.t.Fatalf("partition %s-%d of a subscribed topic is with no member", n, p)
			}
		}
	}
}

func (s *consumerSim) dump() {
	g := s.h.g
	s.t.Logf("group epoch %d target %d", g.groupEpoch, g.targetEpoch)
	for _, id := range g.MemberIDs() {
		v, _ := g.Member(id)
		s.t.Logf("  %s epoch %d/%d %v assigned %v pending %v target %v subs %v", id, v.MemberEpoch, v.PreviousMemberEpoch,
			v.State, v.Assigned, v.PendingRevocation, v.Target, v.SubscribedTopicNames)
	}
	for _, c := range s.clients {
		s.t.Logf("  client %s joined %v epoch %d owned %v", c.memberID, c.joined, c.epoch, c.owned)
	}
}
