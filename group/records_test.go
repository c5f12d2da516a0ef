package group

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"
)

// The byte layouts are checked against hand-assembled Kafka encodings.
func TestRecordBytes(t *testing.T) {
	key := offsetCommitKey("g", topicPartition{"t", 3})
	// int16 1 | string "g" | string "t" | int32 3
	if want := "0001" + "00016 7" + "0001" + "74" + "00000003"; hex.EncodeToString(key) != stripSpaces(want) {
		t.Fatalf("offset commit key %x", key)
	}
	val := encodeOffsetCommitValue(offsetValue{offset: 500, leaderEpoch: 2, metadata: "m", commitTimestampMs: 1000, expireTimestampMs: -1})
	// int16 3 | int64 500 | int32 2 | string "m" | int64 1000
	if want := "0003" + "00000000000001f4" + "00000002" + "00016d" + "00000000000003e8"; hex.EncodeToString(val) != want {
		t.Fatalf("offset commit value %x", val)
	}
	val = encodeOffsetCommitValue(offsetValue{offset: 1, leaderEpoch: -1, commitTimestampMs: 2, expireTimestampMs: 3})
	// v1: int16 1 | int64 1 | string "" | int64 2 | int64 3
	if want := "0001" + "0000000000000001" + "0000" + "0000000000000002" + "0000000000000003"; hex.EncodeToString(val) != want {
		t.Fatalf("offset commit value v1 %x", val)
	}
	if gk := groupMetadataKey("g"); hex.EncodeToString(gk) != "0002000167" {
		t.Fatalf("group metadata key %x", gk)
	}
	inst := "i"
	gv := encodeGroupMetadataValue(groupMetadataValue{
		protocolType: "consumer", generation: 1, protocol: nil, leader: nil, currentStateTimestamp: 5,
		members: []memberMetadataValue{{memberID: "m", groupInstanceID: &inst, clientID: "c", clientHost: "/h",
			rebalanceTimeout: 7, sessionTimeout: 8, subscription: []byte{1}, assignment: []byte{}}},
	})
	want := "0003" + "0008" + hex.EncodeToString([]byte("consumer")) + "00000001" + "ffff" + "ffff" +
		"0000000000000005" + "00000001" +
		"00016d" + "000169" + "000163" + "00022f68" + "00000007" + "00000008" + "0000000101" + "00000000"
	if hex.EncodeToString(gv) != want {
		t.Fatalf("group metadata value\n got %x\nwant %s", gv, want)
	}
}

func stripSpaces(s string) string { return string(bytes.ReplaceAll([]byte(s), []byte(" "), nil)) }

func TestDecodeAllVersions(t *testing.T) {
	// OffsetCommitValue v0 and v2: offset | metadata | commitTimestamp.
	for _, v := range []string{"0000", "0002"} {
		raw, _ := hex.DecodeString(v + "0000000000000009" + "0000" + "0000000000000004")
		got, err := decodeOffsetCommitValue(raw)
		if err != nil || got.offset != 9 || got.leaderEpoch != -1 || got.commitTimestampMs != 4 || got.expireTimestampMs != -1 {
			t.Fatalf("%s: %+v %v", v, got, err)
		}
	}
	// v4 (flexible): offset | leaderEpoch | compact "m" | commitTimestamp | no tags.
	raw, _ := hex.DecodeString("0004" + "0000000000000009" + "00000001" + "026d" + "0000000000000004" + "00")
	if got, err := decodeOffsetCommitValue(raw); err != nil || got.metadata != "m" || got.leaderEpoch != 1 {
		t.Fatalf("v4: %+v %v", got, err)
	}
	// v4 with a tagged field (tag 0, 2 bytes).
	raw, _ = hex.DecodeString("0004" + "0000000000000009" + "00000001" + "026d" + "0000000000000004" + "01" + "00" + "02" + "abcd")
	if _, err := decodeOffsetCommitValue(raw); err != nil {
		t.Fatalf("v4 tags: %v", err)
	}
	// GroupMetadataValue v0: no currentStateTimestamp, rebalanceTimeout, groupInstanceId.
	raw, _ = hex.DecodeString("0000" + "0001" + "63" + "00000002" + "0001" + "72" + "0001" + "6d" + "00000001" +
		"00016d" + "000163" + "000168" + "00001770" + "00000000" + "00000000")
	gv, err := decodeGroupMetadataValue(raw)
	if err != nil || gv.currentStateTimestamp != -1 || len(gv.members) != 1 || gv.members[0].rebalanceTimeout != -1 || gv.members[0].sessionTimeout != 6000 {
		t.Fatalf("group v0: %+v %v", gv, err)
	}
	// Unknown key types (share groups) are skipped; corrupt ones, KIP-848's included,
	// are errors.
	s := NewShard(testConfig())
	if err := s.Replay([]byte{0, 9, 0, 1, 'g'}, []byte{1, 2}); err != nil {
		t.Fatalf("key type 9: %v", err)
	}
	if err := s.Replay([]byte{0, 3, 0, 1, 'g'}, []byte{1, 2}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("key type 3: %v", err)
	}
	if err := s.Replay([]byte{0, 1, 0, 9}, nil); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("short key: %v", err)
	}
	if err := s.Replay(offsetCommitKey("g", topicPartition{"t", 0}), []byte{0, 9, 1}); !errors.Is(err, ErrCorruptRecord) {
		t.Fatalf("bad value version: %v", err)
	}
}

// Replaying what a shard wrote rebuilds the same groups and offsets.
func TestReplayRoundTrip(t *testing.T) {
	h := newHarness(t, testConfig())
	ids, gen := h.stableGroup("g", 2)
	h.commit(8, "g", ids[0], gen, map[int32]int64{0: 10, 1: 11})
	h.commit(8, "simple", "", -1, map[int32]int64{2: 12})
	static := h.join("s", "", withInstance("inst"))
	h.advance(0)
	h.sync("s", static.resp.MemberID, static.resp.Generation, map[string]string{static.resp.MemberID: "x"})
	h.commit(8, "gone", "", -1, map[int32]int64{0: 1})
	h.run(h.s.DeleteGroup(h.now, "gone", func(int16) {}))

	r := NewShard(testConfig())
	for _, rec := range h.log {
		if err := r.Replay(rec.Key, rec.Value); err != nil {
			t.Fatal(err)
		}
	}
	now := h.now.Add(time.Second)
	e := r.Loaded(now)
	if len(e.Timers) != 3 {
		t.Fatalf("%d session timers after load, want 3", len(e.Timers))
	}
	for _, id := range []string{"g", "simple", "s", "gone"} {
		want, got := h.s.DescribeGroup(id, 5, false), r.DescribeGroup(id, 5, false)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("group %s:\nwant %+v\n got %+v", id, want, got)
		}
		wf, gf := h.s.OffsetFetch(id, nil, false), r.OffsetFetch(id, nil, false)
		if !reflect.DeepEqual(wf, gf) {
			t.Fatalf("offsets %s:\nwant %+v\n got %+v", id, wf, gf)
		}
	}
	if g := r.groups["g"]; g.generation != gen || g.leader != ids[0] || !g.isSubscribedToTopic("t") {
		t.Fatalf("replayed group %+v", g)
	}
	if g := r.groups["s"]; g.static["inst"] != static.resp.MemberID {
		t.Fatalf("static member not replayed: %+v", g.static)
	}
	// A replayed member heartbeats with its generation.
	rh := &harness{t: t, s: r, now: now, timers: map[string]time.Time{}}
	rh.run(e)
	if code := rh.heartbeat("g", ids[1], gen); code != 0 {
		t.Fatalf("heartbeat after load %d", code)
	}
}

func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  int32
	}{
		// "test-group".hashCode() = 627841412 (Σ s[i]·31^(n-1-i) in int32): 627841412 % 50 = 12.
		{"test-group", 12},
		// "g".hashCode() = 103.
		{"g", 3},
		// "my-group".hashCode() = -1906497762: abs → 1906497762 % 50 = 12.
		{"my-group", 12},
		{"", 0},
		// "polygenelubricants".hashCode() = Integer.MIN_VALUE: Utils.abs gives 0.
		{"polygenelubricants", 0},
		// A supplementary character hashes as its UTF-16 surrogate pair (1276929186).
		{"\U0001F600grp", 36},
	} {
		if got := PartitionFor(tc.group, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.group, got, tc.want)
		}
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(offsetCommitKey("g", topicPartition{"t", 1}), encodeOffsetCommitValue(offsetValue{offset: 1, metadata: "x", expireTimestampMs: -1}))
	inst := "i"
	f.Add(groupMetadataKey("g"), encodeGroupMetadataValue(groupMetadataValue{protocolType: "consumer",
		members: []memberMetadataValue{{memberID: "m", groupInstanceID: &inst, subscription: consumerMeta("t")}}}))
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{0, 4, 1, 0, 0, 0, 0, 1, 1, 1, 2, 0})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s := NewShard(testConfig())
		_ = s.Replay(key, value)
		_ = s.Loaded(time.Unix(0, 0))
		_ = s.ListGroups(nil, nil)
		for id := range s.groups {
			_ = s.DescribeGroup(id, 5, true)
			_ = s.OffsetFetch(id, nil, true)
		}
		_ = s.ExpireOffsets(time.Unix(1e9, 0))
	})
}
