package replication

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzFetchSessions feeds a sequence of decoded Fetch requests (each: a version byte, a
// big-endian uint16 length, the request body) through a small session cache, each
// answered by a made-up read of its plan, and checks that nothing panics and the
// cache's invariants hold after each: at most its slots, the partition count it keeps
// equal to the sessions' partitions and under its bound, every session's order and
// index in agreement, and every answer naming only partitions its plan read. A nonzero
// session id in a request is taken as the index of a live session, so that incremental
// fetches reach real sessions.
func FuzzFetchSessions(f *testing.F) {
	seq := func(reqs ...*kmsg.FetchRequest) []byte {
		var out []byte
		for _, r := range reqs {
			body := r.AppendTo(nil)
			out = append(out, byte(r.Version))
			out = binary.BigEndian.AppendUint16(out, uint16(len(body)))
			out = append(out, body...)
		}
		return out
	}
	forget := sessionFetch(12, 1, 2, 5)
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.Partitions = "t", []int32{0, 1}
	forget.ForgottenTopics = append(forget.ForgottenTopics, ft)
	f.Add(seq(sessionFetch(12, 0, 0, 0, 1, 2), sessionFetch(12, 1, 1, 3), forget, sessionFetch(12, 1, 3), sessionFetch(12, 1, -1)))
	f.Add(seq(sessionFetch(7, 0, 0, 0), sessionFetch(7, 0, 0, 1, 1), sessionFetch(7, 0, 0, 2), sessionFetch(7, 2, 1, 4), sessionFetch(13, 1, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewFetchSessionCache(2, 50)
		c.maxPartitions = 64
		now := int64(0)
		for n := 0; len(data) >= 3 && n < 32; n++ {
			version := 4 + int16(data[0]%9)
			size := int(binary.BigEndian.Uint16(data[1:3]))
			data = data[3:]
			if size > len(data) {
				return
			}
			body := data[:size]
			data = data[size:]
			r := kmsg.NewPtrFetchRequest()
			r.Version = version
			if r.ReadFrom(body) != nil {
				continue
			}
			if r.SessionID != 0 {
				ids := liveSessionIDs(c)
				if len(ids) > 0 {
					r.SessionID = ids[int(uint32(r.SessionID))%len(ids)]
				}
			}
			now += 10
			fc := c.NewContext(r, r.ReplicaID >= 0, now)
			plan := fc.Request(r)
			a := answerFor(plan, now%3)
			if len(answered(a)) > 1 {
				a.Topics[0].Partitions[0].RecordBatches = []byte{1}
			}
			read := partitionSet(answered(a))
			c.Finish(&fc, plan, a, now)
			for _, p := range answered(a) {
				if !read[p] {
					t.Fatalf("answer names partition %d that its plan did not read", p)
				}
			}
			checkSessionCache(t, c)
		}
	})
}

func partitionSet(ps []int32) map[int32]bool {
	m := map[int32]bool{}
	for _, p := range ps {
		m[p] = true
	}
	return m
}

func liveSessionIDs(c *FetchSessionCache) []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []int32
	for id := range c.sessions {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// checkSessionCache checks the cache's invariants.
func checkSessionCache(t *testing.T, c *FetchSessionCache) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) > c.maxEntries {
		t.Fatalf("%d sessions in %d slots", len(c.sessions), c.maxEntries)
	}
	var total int64
	for id, s := range c.sessions {
		s.mu.Lock()
		n := 0
		for cp := s.head; cp != nil; cp = cp.next {
			if s.parts[cp.key] != cp {
				t.Fatalf("session %d: %v in its order, not its index", id, cp.key)
			}
			if n++; n > len(s.parts) {
				t.Fatalf("session %d: its order is longer than its %d partitions", id, len(s.parts))
			}
		}
		if n != len(s.parts) || s.cachedSize != n || s.id != id || s.epoch <= 0 {
			t.Fatalf("session %d: order %d, index %d, cached size %d, epoch %d", id, n, len(s.parts), s.cachedSize, s.epoch)
		}
		s.mu.Unlock()
		total += int64(n)
	}
	if total != c.numPartitions || total > c.maxPartitions {
		t.Fatalf("sessions hold %d partitions, the cache counts %d (bound %d)", total, c.numPartitions, c.maxPartitions)
	}
}
