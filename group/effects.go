package group

import (
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// batch accumulates the Effects of one call: several steps of a call (a member removed,
// the join phase completed, ...) may each add timers, records and replies.
type batch struct {
	timers    []Timer
	records   []Record
	committed []func(errorCode int16) Effects
	timedOut  []func(errorCode int16) Effects
	replies   []Reply
	producer  *Producer
}

func (b *batch) timer(key string, at time.Time) { b.timers = append(b.timers, Timer{Key: key, At: at}) }
func (b *batch) cancel(key string)              { b.timers = append(b.timers, Timer{Key: key}) }

func (b *batch) reply(send func(kmsg.Response), resp kmsg.Response) {
	if send != nil {
		b.replies = append(b.replies, Reply{Send: send, Response: resp})
	}
}

// write adds records whose outcome committed handles (committed may be nil).
func (b *batch) write(committed func(errorCode int16) Effects, records ...Record) {
	b.records = append(b.records, records...)
	if committed != nil {
		b.committed = append(b.committed, committed)
	}
}

// writeAnswered adds records whose outcome committed handles, and whose answer on a
// timeout timedOut gives (Effects.TimedOut); committed then runs when the batch's fate
// is known, 0 if it landed.
func (b *batch) writeAnswered(committed, timedOut func(errorCode int16) Effects, records ...Record) {
	b.write(committed, records...)
	b.timedOut = append(b.timedOut, timedOut)
}

// writeAnsweredOnce adds records whose fate outcome handles, and whose answer is
// given once, by answer: with the code of the timeout (Effects.TimedOut) if it comes
// first, else with the write's.
func (b *batch) writeAnsweredOnce(outcome, answer func(code int16), records ...Record) {
	answered := false
	once := func(code int16) {
		if !answered {
			answered = true
			answer(code)
		}
	}
	b.writeAnswered(func(code int16) Effects {
		outcome(code)
		once(code)
		return Effects{}
	}, func(code int16) Effects {
		once(code)
		return Effects{}
	}, records...)
}

// writeOnce adds records whose outcome cb handles once: at the timeout (as a failure,
// as Kafka's classic group does when the append future fails with the timeout) or when
// the write's fate is known, whichever comes first. For group metadata records, which
// describe the membership and are superseded by the group's next one: a group whose
// write timed out rebalances, and its next generation's record replaces the late one.
func (b *batch) writeOnce(cb func(errorCode int16) Effects, records ...Record) {
	done := false
	once := func(code int16) Effects {
		if done {
			return Effects{}
		}
		done = true
		return cb(code)
	}
	b.writeAnswered(once, once, records...)
}

// merge appends e's effects to b.
func (b *batch) merge(e Effects) {
	b.timers = append(b.timers, e.Timers...)
	b.records = append(b.records, e.Records...)
	if e.Committed != nil {
		b.committed = append(b.committed, e.Committed)
	}
	if e.TimedOut != nil {
		b.timedOut = append(b.timedOut, e.TimedOut)
	}
	b.replies = append(b.replies, e.Replies...)
	if e.Producer != nil {
		b.producer = e.Producer
	}
}

// effects is the batch as Effects: one write for all records, whose Committed runs every
// step's callback in order and merges what they return.
func (b *batch) effects() Effects {
	e := Effects{Timers: b.timers, Records: b.records, Replies: b.replies, Producer: b.producer}
	if len(b.records) > 0 {
		e.Committed = runAll(b.committed)
		e.TimedOut = runAll(b.timedOut)
	}
	return e
}

// runAll is one callback running callbacks in order and merging what they return; nil
// when there are none.
func runAll(callbacks []func(errorCode int16) Effects) func(errorCode int16) Effects {
	if len(callbacks) == 0 {
		return nil
	}
	return func(errorCode int16) Effects {
		var out batch
		for _, cb := range callbacks {
			out.merge(cb(errorCode))
		}
		return out.effects()
	}
}

// Timer keys: a kind, the group id and, for heartbeats, the member id, separated by NUL
// (which Kafka's group ids may contain only in theory; a clash only fires a timer early,
// and every firing re-checks the state).
const (
	timerJoin      = "join"
	timerSync      = "sync"
	timerHeartbeat = "heartbeat"
	timerSep       = "\x00"
)

func joinKey(groupID string) string { return timerJoin + timerSep + groupID }
func syncKey(groupID string) string { return timerSync + timerSep + groupID }
func heartbeatKey(groupID, memberID string) string {
	return timerHeartbeat + timerSep + groupID + timerSep + memberID
}

// parseTimerKey splits a timer key into its kind, group id and member id.
func parseTimerKey(key string) (kind, groupID, memberID string) {
	parts := strings.SplitN(key, timerSep, 3)
	switch len(parts) {
	case 2:
		return parts[0], parts[1], ""
	case 3:
		return parts[0], parts[1], parts[2]
	}
	return "", "", ""
}

func ms(d int32) time.Duration { return time.Duration(d) * time.Millisecond }

// observe records now as the latest time seen.
func (s *Shard) observe(now time.Time) {
	if now.After(s.latest) {
		s.latest = now
	}
}

// committedNow is the time a write's Committed acts at: the latest time seen, or the
// time of the call that wrote, if later.
func (s *Shard) committedNow(callNow time.Time) time.Time {
	if s.latest.After(callNow) {
		return s.latest
	}
	return callNow
}
