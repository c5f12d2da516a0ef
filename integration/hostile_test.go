package integration

// The 17 hostile-client cases of issue P15, each against one broker with Kafka's
// default limits, each asserting the answer, the state of the connection afterwards,
// that memory stays bounded, and that an ordinary produce and consume still work
// (badInputEnv.checkServing). Cases 1-5 are the wire-level bad inputs that
// TestBadInput (badinput_test.go) already covers and are not repeated here:
//
//	 1 framing: torn frames                       TestBadInput/framing/truncated*
//	 2 sizes: lying frame sizes                   TestBadInput/framing/size*
//	 3 sizes: arrays and bytes claiming 2^31      TestBadInput/framing/Metadata*, Produce*
//	 4 unknown API keys                           TestBadInput/versions/unknown_api_key_9999
//	 5 unknown versions                           TestBadInput/versions/*v99*
//
// TestHostile covers the rest:
//
//	 6 a slow request, one byte at a time, while others are served
//	 7 a client that pipelines requests and does not read the answers
//	 8 pipelined requests answered in order
//	 9 2,000 idle connections
//	10 a huge Fetch: 2 GiB limits, 10,000 partitions
//	11 a huge Metadata request: 100,000 topics
//	12 the poison batch: one record claiming 1 GiB in a 72-byte batch; kcat and kgo
//	   consumers then read the partition to its end
//	13 a gzip bomb: 1 GiB of zeros, and valid records of zeros
//	14 a zstd bomb, likewise
//	15 an lz4 bomb of valid records of zeros
//	16 a snappy block claiming 1 GiB
//	17 CreateTopics with 1,000,000 partitions, and an ordinary CreateTopics beside it

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// heapLimit bounds the process's heap in use (after a GC) during and after any case.
// The probe saw at most 220 MiB of RSS for the clean cases; a broker that trusted a
// 1 GiB claim or decompressed a bomb would pass it by far.
const heapLimit = 256 << 20

// heapInUse is the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// checkHeap fails t when the heap in use is past heapLimit.
func checkHeap(t *testing.T, what string) {
	t.Helper()
	if h := heapInUse(); h > heapLimit {
		t.Errorf("%s: %d MiB of heap in use, the bound is %d MiB", what, h>>20, heapLimit>>20)
	}
}

// checkAlive checks that rc's connection still answers (an ApiVersions round trip).
func checkAlive(t *testing.T, rc *rawConn, after string) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if av := rc.roundTrip(req).(*kmsg.ApiVersionsResponse); av.ErrorCode != 0 {
		t.Fatalf("after %s: ApiVersions on the same connection: error %d", after, av.ErrorCode)
	}
}

// metadataRequest is a Metadata v9 request for topics, without auto-creation.
func metadataRequest(topics ...string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	for _, name := range topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, mt)
	}
	return req
}

// readFrames reads n response frames from rc and returns their correlation ids.
func readFrames(t *testing.T, rc *rawConn, n int) []int32 {
	t.Helper()
	ids := make([]int32, 0, n)
	for range n {
		if err := rc.nc.SetReadDeadline(time.Now().Add(rawTimeout)); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(rc.nc, size[:]); err != nil {
			t.Fatalf("after %d responses: %v", len(ids), err)
		}
		frame := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(rc.nc, frame); err != nil {
			t.Fatalf("after %d responses: %v", len(ids), err)
		}
		ids = append(ids, int32(binary.BigEndian.Uint32(frame)))
	}
	return ids
}

// compressMember compresses data as one complete gzip member or zstd frame (or lz4
// frame) with newWriter.
func compressMember(t *testing.T, data []byte, newWriter func(io.Writer) io.WriteCloser) []byte {
	t.Helper()
	var out bytes.Buffer
	w := newWriter(&out)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// Bombs are built from concatenated members (gzip) or frames (zstd), which decoders
// read as one stream, so that a 1 GiB bomb costs the test one compressed MiB of zeros.

// zeroRecordsBatch is a batch of count valid records whose values are mib MiB of zero
// bytes each. codec is the batch's attribute.
func zeroRecordsBatch(t *testing.T, codec int8, count, mib int, newWriter func(io.Writer) io.WriteCloser) []byte {
	t.Helper()
	zeroMiB := compressMember(t, make([]byte, 1<<20), newWriter)
	trailer := compressMember(t, []byte{0}, newWriter) // no headers
	var section []byte
	for i := range count {
		valueSize := mib << 20
		body := []byte{0}
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = binary.AppendVarint(body, -1)       // null key
		body = binary.AppendVarint(body, int64(valueSize))
		length := len(body) + valueSize + 1 // + the header count
		section = append(section, compressMember(t, append(binary.AppendVarint(nil, int64(length)), body...), newWriter)...)
		for range mib {
			section = append(section, zeroMiB...)
		}
		section = append(section, trailer...)
	}
	return wrapSection(section, int32(count), codec)
}

// zeroStreamBatch is a batch claiming one record whose records section is mib MiB of
// zero bytes (a multiple of 8): the probe's bomb.
func zeroStreamBatch(t *testing.T, codec int8, mib int, newWriter func(io.Writer) io.WriteCloser) []byte {
	t.Helper()
	// 8 MiB members: a gzip member's 18 bytes of framing per MiB would take 1 GiB of
	// zeros (1,040,000 bytes at deflate's best ratio) past max.message.bytes.
	zero8MiB := compressMember(t, make([]byte, 8<<20), newWriter)
	return wrapSection(bytes.Repeat(zero8MiB, mib/8), 1, codec)
}

// wrapSection puts a records section in a producer's v2 batch header with a valid CRC.
func wrapSection(section []byte, count int32, codec int8) []byte {
	now := time.Now().UnixMilli()
	rb := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, Attributes: int16(codec), LastOffsetDelta: count - 1,
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: count, Records: section,
	}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crcCastagnoli(raw[21:]))
	return raw
}

func crcCastagnoli(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }

func gzipWriter(w io.Writer) io.WriteCloser {
	gw, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	return gw
}

func zstdWriter(w io.Writer) io.WriteCloser {
	zw, _ := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	return zw
}

func lz4Writer(w io.Writer) io.WriteCloser {
	lw := lz4.NewWriter(w)
	_ = lw.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.ConcurrencyOption(1))
	return lw
}

func TestHostile(t *testing.T) {
	c := StartCluster(t, 1)
	c.CreateTopic(t, survivorTopic, 1, nil)
	e := &badInputEnv{
		c:    c,
		raw:  c.Addr(0),
		prod: c.Client(t, kgo.DefaultProduceTopic(survivorTopic)),
		cons: c.Client(t, kgo.ConsumeTopics(survivorTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())),
	}
	e.checkServing(t, "start")
	const poisoned = "poisoned"
	c.CreateTopic(t, poisoned, 1, nil)

	t.Run("06 slow request", func(t *testing.T) {
		rc := dialRaw(t, e.raw)
		frame := rc.frame(metadataRequest(survivorTopic))
		// Half the request, a byte at a time, then the broker serves others meanwhile.
		for _, b := range frame[:len(frame)/2] {
			rc.write([]byte{b})
			time.Sleep(5 * time.Millisecond) // the attack is slowness itself, not synchronisation
		}
		e.checkServing(t, "a half-sent slow request")
		for _, b := range frame[len(frame)/2:] {
			rc.write([]byte{b})
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 9
		if err := resp.ReadFrom(rc.readResponse(true)); err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("the slow request's answer: %v %+v", err, resp.Topics)
		}
		checkAlive(t, rc, "a slow request")
		checkHeap(t, "a slow request")
	})

	t.Run("07 pipelining without reading", func(t *testing.T) {
		rc := dialRaw(t, e.raw)
		const n = 20_000
		var frames []byte
		for range n {
			frames = append(frames, rc.frame(metadataRequest(survivorTopic))...)
		}
		first := rc.correlationID - n + 1
		// Written from a goroutine: the broker stops reading once its answers back up.
		written := make(chan error, 1)
		go func() {
			_ = rc.nc.SetWriteDeadline(time.Now().Add(testTimeout))
			_, err := rc.nc.Write(frames)
			written <- err
		}()
		// Nothing is read for a while; the heap must not grow with the backlog.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			checkHeap(t, "unread pipelined answers")
			time.Sleep(200 * time.Millisecond) // sampling the heap while the client does not read
		}
		ids := readFrames(t, rc, n)
		if err := <-written; err != nil {
			t.Fatalf("writing %d requests: %v", n, err)
		}
		for i, id := range ids {
			if id != first+int32(i) {
				t.Fatalf("response %d has correlation id %d, expected %d", i, id, first+int32(i))
			}
		}
		checkAlive(t, rc, "pipelining without reading")
		e.checkServing(t, "pipelining without reading")
	})

	t.Run("08 pipelined requests answered in order", func(t *testing.T) {
		rc := dialRaw(t, e.raw)
		var frames []byte
		kinds := []kmsg.Request{metadataRequest(survivorTopic), kmsg.NewPtrApiVersionsRequest(), metadataRequest("missing")}
		const n = 999
		for i := range n {
			frames = append(frames, rc.frame(kinds[i%len(kinds)])...)
		}
		first := rc.correlationID - n + 1
		rc.write(frames)
		for i, id := range readFrames(t, rc, n) {
			if id != first+int32(i) {
				t.Fatalf("response %d has correlation id %d, expected %d", i, id, first+int32(i))
			}
		}
		checkAlive(t, rc, "pipelined requests")
		e.checkServing(t, "pipelined requests")
	})

	t.Run("09 2,000 idle connections", func(t *testing.T) {
		base := runtime.NumGoroutine()
		var conns []net.Conn
		for i := range 2000 {
			nc, err := net.DialTimeout("tcp", e.raw, rawTimeout)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			conns = append(conns, nc)
			if i%2 == 1 {
				// Every other one stops inside a request's size prefix.
				if _, err := nc.Write([]byte{0, 0}); err != nil {
					t.Fatal(err)
				}
			}
		}
		defer func() {
			for _, nc := range conns {
				nc.Close()
			}
		}()
		checkHeap(t, "2,000 idle connections")
		e.checkServing(t, "2,000 idle connections")
		for _, nc := range conns {
			nc.Close()
		}
		// The broker lets go of them: its goroutines return to about where they were.
		testwait.For(t, 30*time.Second, func() error {
			if g := runtime.NumGoroutine(); g > base+100 {
				return fmt.Errorf("%d goroutines, %d before the connections", g, base)
			}
			return nil
		})
		checkHeap(t, "2,000 closed connections")
	})

	t.Run("10 huge Fetch", func(t *testing.T) {
		rc := dialRaw(t, e.raw)
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<31-1
		req.SessionID, req.SessionEpoch = 0, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = survivorTopic
		for p := range 10_000 {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = int32(p), 1<<31-1, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
		}
		req.Topics = append(req.Topics, ft)
		var resp *kmsg.FetchResponse
		allocated := allocatedDuring(func() { resp = rc.roundTrip(req).(*kmsg.FetchResponse) })
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 10_000 {
			t.Fatalf("huge Fetch: error %d, %d topics", resp.ErrorCode, len(resp.Topics))
		}
		for _, p := range resp.Topics[0].Partitions {
			want := kerr.UnknownTopicOrPartition.Code
			if p.Partition == 0 {
				want = 0
			}
			if p.ErrorCode != want {
				t.Fatalf("partition %d: error %d, expected %d", p.Partition, p.ErrorCode, want)
			}
		}
		if len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Fatal("partition 0's records are missing")
		}
		t.Logf("the process allocated %d KiB meanwhile", allocated>>10)
		if allocated > allocationLimit {
			t.Errorf("the process allocated %d MiB for one Fetch", allocated>>20)
		}
		checkAlive(t, rc, "a huge Fetch")
		checkHeap(t, "a huge Fetch")
		e.checkServing(t, "a huge Fetch")
	})

	t.Run("11 huge Metadata", func(t *testing.T) {
		rc := dialRaw(t, e.raw)
		names := make([]string, 100_000)
		for i := range names {
			names[i] = fmt.Sprintf("no-such-topic-%06d", i)
		}
		req := metadataRequest(names...)
		var resp *kmsg.MetadataResponse
		allocated := allocatedDuring(func() { resp = rc.roundTrip(req).(*kmsg.MetadataResponse) })
		if len(resp.Topics) != len(names) {
			t.Fatalf("%d topics answered, %d asked", len(resp.Topics), len(names))
		}
		for _, mt := range resp.Topics {
			if mt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Fatalf("topic %v: error %d", mt.Topic, mt.ErrorCode)
			}
		}
		t.Logf("the process allocated %d MiB meanwhile", allocated>>20)
		if allocated > 4*allocationLimit {
			t.Errorf("the process allocated %d MiB for one Metadata request", allocated>>20)
		}
		checkAlive(t, rc, "a huge Metadata request")
		checkHeap(t, "a huge Metadata request")
		e.checkServing(t, "a huge Metadata request")
	})

	// refused produces a hostile batch to poisoned on a raw connection and expects code.
	var good []string // values acknowledged on poisoned, in offset order
	refused := func(t *testing.T, batch []byte, code int16, what string) {
		t.Helper()
		if len(batch) > 1_048_588 {
			t.Fatalf("%s: the %d-byte batch is past max.message.bytes: it would not reach the record walk", what, len(batch))
		}
		rc := dialRaw(t, e.raw)
		// The case asserts the refusal and the memory bound, not the speed: under -race
		// on a loaded 2-core machine, decompressing up to the 64 MiB limit took over 10 s
		// (lz4 allocates a block buffer per frame, which sync.Pool drops under -race).
		rc.readTimeout = time.Minute
		var p kmsg.ProduceResponseTopicPartition
		start := time.Now()
		allocated := allocatedDuring(func() { p = produceResult(t, rc.roundTrip(produceRequest(9, -1, poisoned, 0, batch))) })
		msg := ""
		if p.ErrorMessage != nil {
			msg = *p.ErrorMessage
		}
		t.Logf("%s (%d bytes): error %d %q in %v; the process allocated %d KiB meanwhile", what, len(batch), p.ErrorCode, msg, time.Since(start).Round(time.Millisecond), allocated>>10)
		if p.ErrorCode != code {
			t.Fatalf("%s: error %d (%v), expected %d (%v)", what, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode), code, kerr.ErrorForCode(code))
		}
		limit := uint64(allocationLimit)
		if raceDetector {
			limit *= 8 // pooled decoder buffers are dropped and allocated again
		}
		if allocated > limit {
			t.Errorf("%s: the process allocated %d MiB", what, allocated>>20)
		}
		checkAlive(t, rc, what)
		checkHeap(t, what)
		value := fmt.Sprintf("good after %s", what)
		if err := e.prod.ProduceSync(testContext(t), &kgo.Record{Topic: poisoned, Value: []byte(value)}).FirstErr(); err != nil {
			t.Fatalf("after %s: %v", what, err)
		}
		good = append(good, value)
		e.checkServing(t, what)
	}

	t.Run("12 poison batch", func(t *testing.T) {
		// One record claiming 1 GiB: length varint, then attributes, deltas, null key and
		// value, no headers: the 81-byte batch of the probe.
		record := append(binary.AppendVarint(nil, 1<<30), 0, 0, 0, 1, 1, 0)
		refused(t, wrapSection(record, 1, 0), kerr.InvalidRecord.Code, "the poison batch")
		// Consumers read the partition to its end: kgo (checked below) and kcat.
		cons := c.Client(t, kgo.ConsumeTopics(poisoned), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < len(good) {
			fs := cons.PollFetches(testContext(t))
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if fmt.Sprint(got) != fmt.Sprint(good) {
			t.Fatalf("kgo read %q, expected %q", got, good)
		}
		msgs := kcatConsumeJSON(t, e.raw, poisoned) // kcat -e: ends at the end of the partition
		if len(msgs) != len(good) || msgs[0].Offset != 0 || msgs[0].Payload == nil || *msgs[0].Payload != good[0] {
			t.Fatalf("kcat read %+v, expected %q", msgs, good)
		}
	})

	t.Run("13 gzip bomb", func(t *testing.T) {
		refused(t, zeroStreamBatch(t, 1, 1024, gzipWriter), kerr.InvalidRecord.Code, "gzip: 1 GiB of zeros")
		refused(t, zeroRecordsBatch(t, 1, 512, 1, gzipWriter), kerr.MessageTooLarge.Code, "gzip: 512 records of 1 MiB of zeros")
	})
	t.Run("14 zstd bomb", func(t *testing.T) {
		refused(t, zeroStreamBatch(t, 4, 1024, zstdWriter), kerr.InvalidRecord.Code, "zstd: 1 GiB of zeros")
		refused(t, zeroRecordsBatch(t, 4, 1024, 1, zstdWriter), kerr.MessageTooLarge.Code, "zstd: 1,024 records of 1 MiB of zeros")
		refused(t, zeroRecordsBatch(t, 4, 1, 1024, zstdWriter), kerr.MessageTooLarge.Code, "zstd: one record of 1 GiB of zeros")
	})
	t.Run("15 lz4 bomb", func(t *testing.T) {
		refused(t, zeroRecordsBatch(t, 3, 200, 1, lz4Writer), kerr.MessageTooLarge.Code, "lz4: 200 records of 1 MiB of zeros")
	})
	t.Run("16 snappy block claiming 1 GiB", func(t *testing.T) {
		// A raw snappy block: the decoded length varint, then one short literal.
		block := binary.AppendUvarint(nil, 1<<30)
		block = append(block, 4<<2, 'z', 'e', 'r', 'o', 's')
		refused(t, wrapSection(block, 1, 2), kerr.MessageTooLarge.Code, "snappy: a block claiming 1 GiB")
	})

	t.Run("17 CreateTopics with 1,000,000 partitions", func(t *testing.T) {
		create := func(name string, partitions int32) (kmsg.CreateTopicsResponseTopic, time.Duration) {
			rc := dialRaw(t, e.raw)
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.TimeoutMillis = 7, 30000
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
			req.Topics = append(req.Topics, rt)
			start := time.Now()
			resp := rc.roundTrip(req).(*kmsg.CreateTopicsResponse)
			took := time.Since(start)
			checkAlive(t, rc, "CreateTopics")
			if len(resp.Topics) != 1 {
				t.Errorf("CreateTopics %s: %d topics answered", name, len(resp.Topics))
				return kmsg.CreateTopicsResponseTopic{}, took
			}
			return resp.Topics[0], took
		}
		var wg sync.WaitGroup
		var huge kmsg.CreateTopicsResponseTopic
		var hugeTook time.Duration
		wg.Add(1)
		go func() {
			defer wg.Done()
			huge, hugeTook = create("a-million-partitions", 1_000_000)
		}()
		ordinary, ordinaryTook := create("ordinary", 1)
		wg.Wait()
		msg := ""
		if huge.ErrorMessage != nil {
			msg = *huge.ErrorMessage
		}
		t.Logf("1,000,000 partitions: error %d %q in %v; the ordinary topic beside it: error %d in %v",
			huge.ErrorCode, msg, hugeTook, ordinary.ErrorCode, ordinaryTook)
		if huge.ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("1,000,000 partitions: error %d, expected POLICY_VIOLATION", huge.ErrorCode)
		}
		if ordinary.ErrorCode != 0 {
			t.Fatalf("the ordinary CreateTopics: error %d %v", ordinary.ErrorCode, ordinary.ErrorMessage)
		}
		// Not a speed assertion: a guard against the old minutes of work.
		if hugeTook > 10*time.Second {
			t.Errorf("the refusal took %v", hugeTook)
		}
		topics, err := c.Admin(t).ListTopics(testContext(t))
		if err != nil {
			t.Fatal(err)
		}
		if topics.Has("a-million-partitions") || !topics.Has("ordinary") {
			t.Fatalf("topics %v", topics.Names())
		}
		checkHeap(t, "CreateTopics with 1,000,000 partitions")
		e.checkServing(t, "CreateTopics with 1,000,000 partitions")
	})
}
