package group

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// regexInvariants: the counts of members per regular expression match the members,
// and every expression a member uses has a resolution.
func regexInvariants(g *ConsumerGroup) error {
	counts := map[string]int{}
	for _, m := range g.members {
		if r := m.meta.SubscribedTopicRegex; r != "" {
			counts[r]++
		}
	}
	if !maps.Equal(counts, g.regex.members) && (len(counts) != 0 || len(g.regex.members) != 0) {
		return fmt.Errorf("regex counts %v, members say %v", g.regex.members, counts)
	}
	for r := range counts {
		if _, ok := g.regex.resolved[r]; !ok {
			return fmt.Errorf("regex %q is used but not resolved", r)
		}
	}
	return nil
}

// sameRegexes compares two groups' resolutions.
func sameRegexes(a, b *ConsumerGroup) error {
	if x, y := a.RegularExpressions(), b.RegularExpressions(); !slices.Equal(x, y) {
		return fmt.Errorf("resolved regexes %q vs %q", x, y)
	}
	for r, x := range a.regex.resolved {
		y := b.regex.resolved[r]
		if !slices.Equal(x.topics, y.topics) || x.version != y.version || x.timestamp != y.timestamp {
			return fmt.Errorf("resolution of %q: %+v vs %+v", r, x, y)
		}
	}
	return nil
}

// cgRegexJoin is a join subscribing with regex (and names, when given).
func cgRegexJoin(member, regex string, names ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	req := cgJoinRequest(member, names...)
	if len(names) == 0 {
		req.SubscribedTopicNames = nil
	}
	req.SubscribedTopicRegex = kmsg.StringPtr(regex)
	return req
}

// regexTopics is a metadata image of the named topics (ids 1, 2, ... in order), each
// with two partitions, plus Kafka's internal topics.
func regexTopics(names ...string) ConsumerTopicMap {
	m := ConsumerTopicMap{
		"__consumer_offsets":  {ID: testTopicID(100), Name: "__consumer_offsets", Partitions: 50},
		"__transaction_state": {ID: testTopicID(101), Name: "__transaction_state", Partitions: 50},
	}
	for i, n := range names {
		m[n] = AssignorTopic{ID: testTopicID(i + 1), Name: n, Partitions: 2}
	}
	return m
}

func (h *cgHarness) resolved(regex string) []string {
	h.t.Helper()
	topics, ok := h.g.ResolvedRegularExpression(regex)
	if !ok {
		h.t.Fatalf("%q is not resolved (group has %q)", regex, h.g.RegularExpressions())
	}
	return topics
}

// assignedNames is the member's assignment as topic names.
func (h *cgHarness) assignedNames(member string) []string {
	h.t.Helper()
	m, ok := h.g.Member(member)
	if !ok {
		h.t.Fatalf("no member %s", member)
	}
	var out []string
	for _, t := range h.topics {
		if len(m.Assigned[t.ID]) > 0 {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// An invalid regular expression new to the group is refused with
// INVALID_REGULAR_EXPRESSION and Kafka's message, and changes nothing; one that only
// the anchoring would make valid is refused too.
func TestConsumerRegexInvalid(t *testing.T) {
	for regex, reason := range map[string]string{
		"orders(":   "missing closing )",
		"a)|(b":     "unexpected )",
		"[z-a]":     "invalid character class range",
		`orders\`:   "trailing backslash at end of expression",
		"(?<x>a)?*": "invalid nested repetition operator",
	} {
		h := newCG(t, testConsumerConfig(), regexTopics("orders"))
		resp := h.send(cgRegexJoin("m1", regex))
		want := fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %s.", regex, reason)
		if resp.ErrorCode != kerr.InvalidRegularExpression.Code || deref(resp.ErrorMessage) != want {
			t.Errorf("%q: %v %q, want INVALID_REGULAR_EXPRESSION %q", regex, kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage), want)
		}
		if h.g.NumMembers() != 0 || len(h.events) != 0 {
			t.Errorf("%q: the refused join changed the group", regex)
		}
	}
	// A member of the group switching to an invalid expression is refused too.
	h := newCG(t, testConsumerConfig(), regexTopics("orders"))
	h.ok(cgRegexJoin("m1", "orders"))
	m, _ := h.g.Member("m1")
	req := cgHBRequest("m1", m.MemberEpoch, nil)
	req.SubscribedTopicRegex = kmsg.StringPtr("(")
	if resp := h.send(req); resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("switch to an invalid regex: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if m, _ := h.g.Member("m1"); m.SubscribedTopicRegex != "orders" {
		t.Fatalf("the refused heartbeat changed the subscription to %q", m.SubscribedTopicRegex)
	}
}

// A regular expression is resolved at the join that brings it, against whole topic
// names (RE2 syntax, as Kafka's RE2/J matches()), never matching internal topics; the
// member gets every partition of the matched topics.
func TestConsumerRegexResolvesAtJoin(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders", "orders-eu", "reorders", "payments"))
	resp := h.ok(cgRegexJoin("m1", `orders(-\w+)?`))
	if got := h.resolved(`orders(-\w+)?`); !slices.Equal(got, []string{"orders", "orders-eu"}) {
		t.Fatalf("resolved to %q", got)
	}
	if resp.MemberEpoch != 1 || countPartitions(respAssignment(resp)) != 4 {
		t.Fatalf("epoch %d assignment %v", resp.MemberEpoch, respAssignment(resp))
	}
	// Everything, and names starting with underscores, still leave out the internal
	// topics.
	h.ok(cgRegexJoin("m2", ".*"))
	h.ok(cgRegexJoin("m3", "__.*"))
	if got := h.resolved(".*"); !slices.Equal(got, []string{"orders", "orders-eu", "payments", "reorders"}) {
		t.Fatalf(".* resolved to %q", got)
	}
	if got := h.resolved("__.*"); len(got) != 0 {
		t.Fatalf("__.* resolved to %q", got)
	}
	// The resolution is recorded with the resolution time.
	var ev ConsumerRegularExpressionResolved
	for _, e := range h.events {
		if r, ok := e.(ConsumerRegularExpressionResolved); ok && r.Regex == ".*" {
			ev = r
		}
	}
	if ev.Timestamp != h.now.UnixMilli() || ev.Version == 0 {
		t.Fatalf("resolution event %+v", ev)
	}
}

// A member's subscription is its names and its expression's topics: the group's
// subscribed topics and each member's assignment cover both.
func TestConsumerRegexUnionWithNames(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders", "orders-eu", "payments", "audit"))
	h.ok(cgRegexJoin("m1", "orders.*", "audit"))
	if got := h.assignedNames("m1"); !slices.Equal(got, []string{"audit", "orders", "orders-eu"}) {
		t.Fatalf("m1 assigned %q", got)
	}
	if got := h.g.subscribedTopicNames(); !slices.Equal(got, []string{"audit", "orders", "orders-eu"}) {
		t.Fatalf("group subscribes to %q", got)
	}
	for topic, want := range map[string]bool{"audit": true, "orders-eu": true, "payments": false} {
		if got := h.g.IsSubscribedToTopic(topic); got != want {
			t.Errorf("IsSubscribedToTopic(%q) = %v", topic, got)
		}
	}
	// A member by names only shares what it names; payments goes to it alone.
	h.ok(cgJoinRequest("m2", "payments", "orders"))
	if got := h.g.subscribedTopicNames(); !slices.Equal(got, []string{"audit", "orders", "orders-eu", "payments"}) {
		t.Fatalf("group subscribes to %q", got)
	}
	target1, _ := h.g.Member("m1")
	target2, _ := h.g.Member("m2")
	pay := h.topics["payments"].ID
	if len(target1.Target[pay]) != 0 || len(target2.Target[pay]) != 2 {
		t.Fatalf("payments went to m1 %v, m2 %v", target1.Target[pay], target2.Target[pay])
	}
	if n := countPartitions(target1.Target) + countPartitions(target2.Target); n != 8 {
		t.Fatalf("%d partitions assigned, want 8", n)
	}
}

// heartbeatAt sends member's heartbeat at its epoch at now+d, reporting what it owns.
func (h *cgHarness) heartbeatAt(member string, d time.Duration) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	h.now = h.now.Add(d)
	m, _ := h.g.Member(member)
	return h.ok(cgHBRequest(member, m.MemberEpoch, m.Assigned))
}

// A topic created after the resolution is picked up by the first heartbeat more than
// RegexRefreshMinInterval after it, which bumps the group epoch; a heartbeat within
// it changes nothing. A deleted topic drops out of the assignment at once (the
// subscribed metadata changed) and out of the resolution at the next refresh.
func TestConsumerRegexRefreshesOnTopicChanges(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders", "payments"))
	h.ok(cgRegexJoin("m1", "orders.*"))
	epoch := h.g.GroupEpoch()
	h.topics["orders-us"] = AssignorTopic{ID: testTopicID(7), Name: "orders-us", Partitions: 3}
	h.heartbeatAt("m1", 5*time.Second)
	if h.g.GroupEpoch() != epoch || !slices.Equal(h.resolved("orders.*"), []string{"orders"}) {
		t.Fatalf("refreshed within the minimum interval: epoch %d, %q", h.g.GroupEpoch(), h.resolved("orders.*"))
	}
	h.heartbeatAt("m1", 5*time.Second) // exactly 10 s: Kafka refreshes only past it
	if h.g.GroupEpoch() != epoch {
		t.Fatal("refreshed at exactly the minimum interval")
	}
	h.heartbeatAt("m1", time.Millisecond)
	if got := h.resolved("orders.*"); !slices.Equal(got, []string{"orders", "orders-us"}) {
		t.Fatalf("after the interval resolved to %q", got)
	}
	if h.g.GroupEpoch() != epoch+1 {
		t.Fatalf("group epoch %d, want %d", h.g.GroupEpoch(), epoch+1)
	}
	h.heartbeatAt("m1", time.Millisecond) // takes the new partitions
	if got := h.assignedNames("m1"); !slices.Equal(got, []string{"orders", "orders-us"}) {
		t.Fatalf("assigned %q", got)
	}

	// Deletion: the next heartbeat drops the topic from the target (the metadata of
	// the subscribed topics changed), before any refresh.
	delete(h.topics, "orders")
	epoch = h.g.GroupEpoch()
	h.heartbeatAt("m1", time.Second)
	if h.g.GroupEpoch() != epoch+1 {
		t.Fatalf("a deleted topic did not bump the epoch: %d", h.g.GroupEpoch())
	}
	if m, _ := h.g.Member("m1"); countPartitions(m.Target) != 3 {
		t.Fatalf("target %v still has the deleted topic", m.Target)
	}
	epoch = h.g.GroupEpoch()
	h.heartbeatAt("m1", RegexRefreshMinInterval)
	if got := h.resolved("orders.*"); !slices.Equal(got, []string{"orders-us"}) {
		t.Fatalf("after the deletion resolved to %q", got)
	}
	if h.g.GroupEpoch() != epoch {
		t.Fatal("the deleted topic leaving the resolution rebalanced again")
	}
	// A topic that does not match changes the names but not the resolution: it is
	// refreshed (a new record) without a new epoch.
	h.topics["billing"] = AssignorTopic{ID: testTopicID(8), Name: "billing", Partitions: 1}
	epoch, before := h.g.GroupEpoch(), len(h.events)
	h.heartbeatAt("m1", RegexRefreshMinInterval+time.Millisecond)
	if h.g.GroupEpoch() != epoch || !hasRegexEvent(h.events[before:], "orders.*") {
		t.Fatalf("epoch %d (was %d), events %v", h.g.GroupEpoch(), epoch, h.events[before:])
	}
}

func hasRegexEvent(events []ConsumerEvent, regex string) bool {
	for _, e := range events {
		if r, ok := e.(ConsumerRegularExpressionResolved); ok && r.Regex == regex {
			return true
		}
	}
	return false
}

// Without topic changes the resolutions are refreshed once
// group.consumer.regex.refresh.interval.ms passed (to follow ACL changes), and not
// before.
func TestConsumerRegexRefreshInterval(t *testing.T) {
	cfg := testConsumerConfig()
	cfg.RegexRefreshInterval = time.Minute
	h := newCG(t, cfg, regexTopics("orders"))
	h.ok(cgRegexJoin("m1", "orders"))
	for i := 0; i < 6; i++ {
		before := len(h.events)
		h.heartbeatAt("m1", 10*time.Second)
		if hasRegexEvent(h.events[before:], "orders") {
			t.Fatalf("refreshed after %d s without a change", (i+1)*10)
		}
	}
	before := len(h.events)
	h.heartbeatAt("m1", time.Millisecond)
	if !hasRegexEvent(h.events[before:], "orders") {
		t.Fatal("not refreshed after the refresh interval")
	}
	if DefaultRegexRefreshInterval != 10*time.Minute || RegexRefreshMinInterval != 10*time.Second {
		t.Fatal("Kafka's defaults changed")
	}
}

// With a ConsumerTopicDescriber (the broker's authorizer for the heartbeat's
// principal), the resolution keeps only the topics it allows.
func TestConsumerRegexDescribeFilter(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders", "orders-secret", "orders-eu"))
	var asked []string
	topics := ConsumerTopicsWithDescriber(h.topics, func(name string) bool {
		asked = append(asked, name)
		return name != "orders-secret"
	})
	res := h.g.Heartbeat(cgRegexJoin("m1", "orders.*"), ConsumerClient{}, h.now, topics)
	if res.Response.ErrorCode != 0 {
		t.Fatalf("join: %v", kerr.ErrorForCode(res.Response.ErrorCode))
	}
	h.events = append(h.events, res.Events...)
	h.check()
	if got := h.resolved("orders.*"); !slices.Equal(got, []string{"orders", "orders-eu"}) {
		t.Fatalf("resolved to %q", got)
	}
	if !slices.Equal(asked, []string{"orders", "orders-eu", "orders-secret"}) {
		t.Fatalf("asked about %q, want only the matched topics", asked)
	}
	if ConsumerTopicsWithDescriber(h.topics, nil) == nil {
		t.Fatal("nil filter")
	}
}

// A resolution lives while a member uses its expression: members sharing one share
// the resolution; the last one switching away, leaving or expiring deletes it.
func TestConsumerRegexRemovedWhenUnused(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders", "payments"))
	h.ok(cgRegexJoin("m1", "orders"))
	h.ok(cgRegexJoin("m2", "orders"))
	h.ok(cgRegexJoin("m3", "pay.*"))
	if got := h.g.RegularExpressions(); !slices.Equal(got, []string{"orders", "pay.*"}) {
		t.Fatalf("regexes %q", got)
	}
	h.ok(cgHBRequest("m1", LeaveMemberEpoch, nil))
	if got := h.g.RegularExpressions(); !slices.Equal(got, []string{"orders", "pay.*"}) {
		t.Fatalf("after one of two left: %q", got)
	}
	m2, _ := h.g.Member("m2")
	req := cgHBRequest("m2", m2.MemberEpoch, nil)
	req.SubscribedTopicRegex = kmsg.StringPtr("pay.*")
	h.ok(req)
	if got := h.g.RegularExpressions(); !slices.Equal(got, []string{"pay.*"}) {
		t.Fatalf("after the last user switched: %q", got)
	}
	// An empty expression clears the member's; names take over.
	m3, _ := h.g.Member("m3")
	req = cgHBRequest("m3", m3.MemberEpoch, nil)
	req.SubscribedTopicRegex = kmsg.StringPtr("")
	req.SubscribedTopicNames = []string{"orders"}
	h.ok(req)
	if got := h.g.subscribedTopicNames(); !slices.Equal(got, []string{"orders", "payments"}) {
		t.Fatalf("subscribed %q", got)
	}
	h.now = h.now.Add(time.Hour)
	h.expire()
	if h.g.NumMembers() != 0 || len(h.g.RegularExpressions()) != 0 {
		t.Fatalf("after expiry: %d members, regexes %q", h.g.NumMembers(), h.g.RegularExpressions())
	}
}

// A static member replacing its earlier instance keeps the expression's resolution.
func TestConsumerRegexStaticReplacement(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders"))
	h.ok(staticReq(cgRegexJoin("m1", "orders"), "i1"))
	h.ok(staticReq(cgHBRequest("m1", LeaveStaticMemberEpoch, nil), "i1"))
	h.ok(staticReq(cgRegexJoin("m2", "orders"), "i1"))
	if got := h.g.RegularExpressions(); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("regexes %q", got)
	}
	if got := h.assignedNames("m2"); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("assigned %q", got)
	}
}

// A full heartbeat with an expression (and no names) gets the assignment back, as
// Kafka's isFullRequest counts either subscription.
func TestConsumerRegexFullRequest(t *testing.T) {
	h := newCG(t, testConsumerConfig(), regexTopics("orders"))
	h.ok(cgRegexJoin("m1", "orders"))
	m, _ := h.g.Member("m1")
	req := cgHBRequest("m1", m.MemberEpoch, m.Assigned)
	req.RebalanceTimeoutMillis = 30_000
	req.SubscribedTopicRegex = kmsg.StringPtr("orders")
	if resp := h.ok(req); resp.Assignment == nil {
		t.Fatal("a full request with a regex got no assignment")
	}
}
