package group

// Regular expression subscriptions of KIP-848 consumer groups (a heartbeat's
// SubscribedTopicRegex): Kafka 4.x resolves them on the coordinator with RE2/J, against
// the whole topic name (Pattern.matcher(name).matches()); Go's regexp is RE2, the
// same syntax, anchored here as ^(?:re)$ for the same whole-name match.
//
// A group keeps, per distinct expression its members use, the topics it resolved to
// (Kafka's ResolvedRegularExpression, record type 16 with the topics, a version and a
// timestamp). The topics a group subscribes to are the members' names and the
// resolutions of the expressions in use; each member's own subscription, for the
// assignor and for its reconciliation, is its names plus its expression's topics.
//
// When the resolutions are made (GroupMetadataManager.maybeUpdateRegularExpressions,
// run synchronously here: Kafka resolves on a background executor and writes the
// result later):
//   - an expression no member used before is validated (INVALID_REGULAR_EXPRESSION,
//     with Kafka's message) and resolved at the heartbeat that brings it, together
//     with every other expression of the group (Kafka also waits for its 10 s guard
//     here; resolving at once gives the new member its topics in its first epoch);
//   - otherwise a heartbeat refreshes them all when more than 10 s
//     (REGEX_BATCH_REFRESH_MIN_INTERVAL_MS) passed since the last resolution and either
//     the topic names changed since (Kafka: a topic was created) or
//     ConsumerConfig.RegexRefreshInterval (group.consumer.regex.refresh.interval.ms)
//     passed;
//   - an expression no member uses any more is deleted (a tombstone of its record).
//
// A resolution whose topics changed (beyond dropping deleted topics, which left the
// assignment already) bumps the group epoch: a new target assignment.
// The topic names come from ConsumerTopics.ConsumerTopicNames, which leaves out the
// internal topics; when the ConsumerTopics also implements ConsumerTopicDescriber, the
// resolutions keep only the topics it allows (Kafka 4.x keeps those the member whose
// heartbeat resolves them may DESCRIBE).

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RegexRefreshMinInterval is Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: a group's
// regular expressions are not refreshed again within this time of their last
// resolution.
const RegexRefreshMinInterval = 10 * time.Second

// DefaultRegexRefreshInterval is group.consumer.regex.refresh.interval.ms's default
// (600000): a group's regular expressions are refreshed at least this often while its
// members heartbeat, even when no topic came or went (to follow ACL changes).
const DefaultRegexRefreshInterval = 10 * time.Minute

// ConsumerTopicDescriber is implemented by a ConsumerTopics that knows who sent the
// heartbeat: the broker's authorizer with the request's principal. When the topics
// passed to a heartbeat implement it, the regular expressions the heartbeat resolves
// keep only the topics DescribableTopics returns (Kafka 4.x
// filterTopicDescribeAuthorizedTopics: DESCRIBE on each matched topic). Without it,
// every matched topic is kept.
type ConsumerTopicDescriber interface {
	// DescribableTopics returns those of names (sorted, de-duplicated) the member
	// may describe, in the same order. Called once per resolution, from the
	// heartbeat's goroutine.
	DescribableTopics(names []string) []string
}

// ConsumerTopicsWithDescriber returns topics with describable as its
// ConsumerTopicDescriber: regular expressions resolved against it keep the matched
// topics for which describable returns true. A nil describable keeps them all.
func ConsumerTopicsWithDescriber(topics ConsumerTopics, describable func(topic string) bool) ConsumerTopics {
	if describable == nil {
		return topics
	}
	return describedTopics{ConsumerTopics: topics, describable: describable}
}

type describedTopics struct {
	ConsumerTopics
	describable func(string) bool
}

func (d describedTopics) DescribableTopics(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if d.describable(n) {
			out = append(out, n)
		}
	}
	return out
}

// ConsumerRegularExpressionResolved is what a subscribed regular expression resolved
// to: Kafka's ConsumerGroupRegularExpressionKey/Value (record type 16).
type ConsumerRegularExpressionResolved struct {
	Regex string
	// Topics are the matched topic names, sorted.
	Topics []string
	// Version identifies the topic names resolved against: this package's digest of
	// them (Kafka stores the metadata image's offset), only compared with itself.
	Version int64
	// Timestamp is when the expression was resolved, in milliseconds.
	Timestamp int64
}

// ConsumerRegularExpressionRemoved deletes the resolution of an expression no member
// uses any more: the tombstone of its record.
type ConsumerRegularExpressionRemoved struct {
	Regex string
}

func (ConsumerRegularExpressionResolved) consumerEvent() {}
func (ConsumerRegularExpressionRemoved) consumerEvent()  {}

// resolvedRegex is one resolution (Kafka's ResolvedRegularExpression).
type resolvedRegex struct {
	topics             []string
	version, timestamp int64
}

// consumerRegexes is a group's regular expressions; the zero value is empty.
type consumerRegexes struct {
	// resolved holds the resolution of each expression, by expression.
	resolved map[string]resolvedRegex
	// members counts the members subscribing with each expression.
	members map[string]int
}

// countRegex adds delta to the members subscribing with regex ("" is none).
func (g *ConsumerGroup) countRegex(regex string, delta int) {
	if regex == "" {
		return
	}
	if g.regex.members == nil {
		g.regex.members = map[string]int{}
	}
	if g.regex.members[regex] += delta; g.regex.members[regex] <= 0 {
		delete(g.regex.members, regex)
	}
}

// applyRegexResolved records a resolution (replay of a type 16 record).
func (g *ConsumerGroup) applyRegexResolved(e ConsumerRegularExpressionResolved) {
	if g.regex.resolved == nil {
		g.regex.resolved = map[string]resolvedRegex{}
	}
	topics := slices.Clone(e.Topics)
	slices.Sort(topics)
	g.regex.resolved[e.Regex] = resolvedRegex{topics: slices.Compact(topics), version: e.Version, timestamp: e.Timestamp}
}

// ResolvedRegularExpression returns the topics regex resolved to, sorted; ok is false
// when the group holds no resolution of it.
func (g *ConsumerGroup) ResolvedRegularExpression(regex string) (topics []string, ok bool) {
	r, ok := g.regex.resolved[regex]
	return slices.Clone(r.topics), ok
}

// RegularExpressions returns the expressions the group holds a resolution of, sorted.
func (g *ConsumerGroup) RegularExpressions() []string {
	return slices.Sorted(maps.Keys(g.regex.resolved))
}

// memberTopicNames is the topics a member with metadata meta subscribes to: its names
// and its expression's resolution, sorted.
func (g *ConsumerGroup) memberTopicNames(meta ConsumerMemberUpdated) []string {
	r, ok := g.regex.resolved[meta.SubscribedTopicRegex]
	if meta.SubscribedTopicRegex == "" || !ok {
		return meta.SubscribedTopicNames
	}
	return unionSorted(meta.SubscribedTopicNames, r.topics)
}

// subscribedTopicNames is the topics the group subscribes to, sorted: the members'
// names and the resolutions of the expressions members use (a resolution no member
// uses, left by a failed write's replay, counts for nothing).
func (g *ConsumerGroup) subscribedTopicNames() []string {
	names := slices.Sorted(maps.Keys(g.subscribed))
	for regex := range g.regex.members {
		names = unionSorted(names, g.regex.resolved[regex].topics)
	}
	return names
}

// IsSubscribedToTopic reports whether a member subscribes to topic, by name or through
// the resolution of its regular expression (Kafka's ConsumerGroup
// .isSubscribedToTopic): its offsets then neither expire nor can be deleted by
// OffsetDelete (GROUP_SUBSCRIBED_TO_TOPIC).
func (g *ConsumerGroup) IsSubscribedToTopic(topic string) bool {
	if g.subscribed[topic] > 0 {
		return true
	}
	for regex := range g.regex.members {
		if _, found := slices.BinarySearch(g.regex.resolved[regex].topics, topic); found {
			return true
		}
	}
	return false
}

// unionSorted merges two sorted, de-duplicated lists.
func unionSorted(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	if len(a) == 0 {
		return b
	}
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// regexPlan is what a heartbeat changes about the group's regular expressions,
// computed before anything changes.
type regexPlan struct {
	// events are the tombstones of expressions no member will use, then the new
	// resolutions, each in expression order.
	events []ConsumerEvent
	// topics maps each expression members use after the heartbeat to its topics.
	topics map[string][]string
	// changed is whether the topics of an expression in use changed.
	changed bool
}

// memberTopics is the topics a member with metadata m subscribes to under the plan.
func (p *regexPlan) memberTopics(m ConsumerMemberUpdated) []string {
	if m.SubscribedTopicRegex == "" {
		return m.SubscribedTopicNames
	}
	return unionSorted(m.SubscribedTopicNames, p.topics[m.SubscribedTopicRegex])
}

// union adds the topics of every expression in use to names (sorted).
func (p *regexPlan) union(names []string) []string {
	for _, regex := range slices.Sorted(maps.Keys(p.topics)) {
		names = unionSorted(names, p.topics[regex])
	}
	return names
}

// planRegexes decides, at now, the group's expressions once member meta replaces its
// member's metadata (and the static member replaced, if any): a new expression is
// validated, the expressions are resolved when one is new or a refresh is due, and
// the expressions no member uses are deleted.
func (g *ConsumerGroup) planRegexes(meta ConsumerMemberUpdated, replaced *consumerMember, now time.Time, topics ConsumerTopics) (regexPlan, *hbError) {
	counts := maps.Clone(g.regex.members)
	if counts == nil {
		counts = map[string]int{}
	}
	adjust := func(regex string, delta int) {
		if regex != "" {
			if counts[regex] += delta; counts[regex] <= 0 {
				delete(counts, regex)
			}
		}
	}
	if m, ok := g.members[meta.MemberID]; ok {
		adjust(m.meta.SubscribedTopicRegex, -1)
	}
	if replaced != nil && replaced.meta.MemberID != meta.MemberID {
		adjust(replaced.meta.SubscribedTopicRegex, -1)
	}
	if regex := meta.SubscribedTopicRegex; regex != "" && g.regex.members[regex] == 0 {
		// Only an expression new to the group is checked, as Kafka: the others were.
		if _, err := compileTopicRegex(regex); err != nil {
			return regexPlan{}, hbErrorf(kerr.InvalidRegularExpression,
				"SubscribedTopicRegex `%s` is not a valid regular expression: %s.", regex, regexErrorDescription(err))
		}
	}
	adjust(meta.SubscribedTopicRegex, 1)

	var p regexPlan
	for _, regex := range g.RegularExpressions() {
		if counts[regex] == 0 {
			p.events = append(p.events, ConsumerRegularExpressionRemoved{Regex: regex})
		}
	}
	p.topics = make(map[string][]string, len(counts))
	for regex := range counts {
		p.topics[regex] = g.regex.resolved[regex].topics
	}
	if len(counts) == 0 {
		return p, nil
	}
	// The names are listed once, and only when a refresh may be due.
	var names []string
	listed := false
	list := func() []string {
		if !listed {
			names, listed = topics.ConsumerTopicNames(), true
		}
		return names
	}
	if !g.regexRefreshDue(counts, now, list) {
		return p, nil
	}
	regexes := slices.Sorted(maps.Keys(counts))
	resolved := resolveRegexes(regexes, list(), topics)
	version := topicNamesVersion(list())
	for _, regex := range regexes {
		// A topic deleted since the last resolution left the assignment already
		// (the subscribed metadata changed): its name leaving the resolution is no
		// reason for another rebalance (Kafka does not refresh on deletions).
		old, had := g.regex.resolved[regex]
		if !had || !slices.Equal(existingTopics(old.topics, topics), resolved[regex]) {
			p.changed = true
		}
		p.topics[regex] = resolved[regex]
		p.events = append(p.events, ConsumerRegularExpressionResolved{
			Regex: regex, Topics: resolved[regex], Version: version, Timestamp: now.UnixMilli(),
		})
	}
	return p, nil
}

// regexRefreshDue reports whether the expressions in use (counts) must be resolved at
// now: one of them has no resolution yet, or more than RegexRefreshMinInterval passed
// since the oldest resolution and either the topic names (listed by names) changed
// since or the refresh interval passed.
func (g *ConsumerGroup) regexRefreshDue(counts map[string]int, now time.Time, names func() []string) bool {
	oldest := int64(0)
	first := true
	for regex := range counts {
		r, ok := g.regex.resolved[regex]
		if !ok {
			return true
		}
		if first || r.timestamp < oldest {
			oldest, first = r.timestamp, false
		}
	}
	nowMs := now.UnixMilli()
	if nowMs <= oldest+RegexRefreshMinInterval.Milliseconds() {
		return false
	}
	if nowMs > oldest+g.regexRefreshInterval().Milliseconds() {
		return true
	}
	version := topicNamesVersion(names())
	for regex := range counts {
		if g.regex.resolved[regex].version != version {
			return true
		}
	}
	return false
}

func (g *ConsumerGroup) regexRefreshInterval() time.Duration {
	if g.cfg.RegexRefreshInterval > 0 {
		return g.cfg.RegexRefreshInterval
	}
	return DefaultRegexRefreshInterval
}

// existingTopics returns those of names that topics holds.
func existingTopics(names []string, topics ConsumerTopics) []string {
	var out []string
	for _, n := range names {
		if _, ok := topics.ConsumerTopic(n); ok {
			out = append(out, n)
		}
	}
	return out
}

// dropUnusedRegexes deletes the resolutions no member uses (after members left).
func (g *ConsumerGroup) dropUnusedRegexes(e *emitter[ConsumerEvent]) {
	for _, regex := range g.RegularExpressions() {
		if g.regex.members[regex] == 0 {
			e.emit(ConsumerRegularExpressionRemoved{Regex: regex})
		}
	}
}

// resolveRegexes matches each of names against each of regexes (whole names),
// keeping the topics topics allows when it is a ConsumerTopicDescriber. An expression
// that does not compile (one replayed from a log this build did not validate) matches
// nothing.
func resolveRegexes(regexes, names []string, topics ConsumerTopics) map[string][]string {
	out := make(map[string][]string, len(regexes))
	matched := map[string]bool{}
	for _, regex := range regexes {
		re, err := compileTopicRegex(regex)
		if err != nil {
			out[regex] = nil
			continue
		}
		var hits []string
		for _, n := range names {
			if re.MatchString(n) {
				hits = append(hits, n)
				matched[n] = true
			}
		}
		slices.Sort(hits)
		out[regex] = slices.Compact(hits)
	}
	if d, ok := topics.(ConsumerTopicDescriber); ok && len(matched) > 0 {
		allowed := map[string]bool{}
		for _, n := range d.DescribableTopics(slices.Sorted(maps.Keys(matched))) {
			allowed[n] = true
		}
		for regex, hits := range out {
			out[regex] = slices.DeleteFunc(hits, func(n string) bool { return !allowed[n] })
		}
	}
	return out
}

// compileTopicRegex compiles a subscription's expression for whole-name matches. The
// expression is compiled alone first, so that one such as "a)|(b" is refused rather
// than made valid by the anchoring group.
func compileTopicRegex(regex string) (*regexp.Regexp, error) {
	if _, err := syntax.Parse(regex, syntax.Perl); err != nil {
		return nil, err
	}
	return regexp.Compile("^(?:" + regex + ")$")
}

// regexErrorDescription is the reason a parse failed, as Java's
// PatternSyntaxException.getDescription gives it (without the expression).
func regexErrorDescription(err error) string {
	var se *syntax.Error
	if errors.As(err, &se) {
		return string(se.Code)
	}
	return err.Error()
}

// topicNamesVersion digests the sorted topic names a resolution was made against.
func topicNamesVersion(names []string) int64 {
	h := fnv.New64a()
	var n [4]byte
	for _, name := range names {
		binary.BigEndian.PutUint32(n[:], uint32(len(name)))
		h.Write(n[:])
		h.Write([]byte(name))
	}
	return int64(h.Sum64())
}

// regexResolutions is the group's resolutions as events, in expression order.
func (g *ConsumerGroup) regexResolutions() []ConsumerEvent {
	var out []ConsumerEvent
	for _, regex := range g.RegularExpressions() {
		r := g.regex.resolved[regex]
		out = append(out, ConsumerRegularExpressionResolved{Regex: regex, Topics: r.topics, Version: r.version, Timestamp: r.timestamp})
	}
	return out
}

// regexRecord is the type 16 record of regex in group groupID; a nil v is its
// tombstone.
func regexRecord(groupID, regex string, v *ConsumerGroupRegularExpressionValue) Record {
	rec := ConsumerGroupRecord{Key: ConsumerGroupKey{Type: RecordTypeConsumerGroupRegularExpression, GroupID: groupID, RegularExpression: regex}}
	if v != nil {
		rec.Value = v
	}
	return rec.Encode()
}

// regexValue is e as its record's value, topics in Java's string order (Kafka's
// newConsumerGroupRegularExpressionRecord).
func regexValue(e ConsumerRegularExpressionResolved) *ConsumerGroupRegularExpressionValue {
	topics := slices.Clone(e.Topics)
	slices.SortFunc(topics, javaCompareStrings)
	if topics == nil {
		topics = []string{}
	}
	return &ConsumerGroupRegularExpressionValue{Topics: topics, Version: e.Version, Timestamp: e.Timestamp}
}
