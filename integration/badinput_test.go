package integration

// Bad inputs against a live broker (reliability.md §5.7, kafka-protocol.md §1.4): broken
// framing and lying lengths on raw sockets, unknown keys and versions, the ApiVersions
// downgrade reply, invalid admin requests, hostile produce batches, and out-of-range
// fetches. After every case the broker must still answer a new connection's
// ApiVersions and a kgo produce/consume round trip; at the end every record that was
// acknowledged before, between and after the bad inputs is read back.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	// rawTimeout bounds each raw-socket read or write.
	rawTimeout = 10 * time.Second
	// closeWithin is how quickly a connection carrying a bad frame must be closed.
	closeWithin = 5 * time.Second
	// maxRequestBytes is the socket.request.max.bytes of the bad-input broker.
	maxRequestBytes = 1 << 20
	// allocationLimit is the most a single bad frame may make the process allocate. A
	// case takes milliseconds, in which the process (other tests run in parallel)
	// allocates kilobytes; trusting a lying length would cost from 100 MiB (a frame
	// buffer at the default socket.request.max.bytes) to gigabytes.
	allocationLimit = 64 << 20
)

// rawConn is a client socket that speaks the Kafka framing by hand.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	// correlationID is the last one used.
	correlationID int32
	// readTimeout, when set, replaces rawTimeout as the wait for a response.
	readTimeout time.Duration
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, rawTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc}
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if err := c.nc.SetWriteDeadline(time.Now().Add(rawTimeout)); err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// frame returns req's whole request frame with a fresh correlation id.
func (c *rawConn) frame(req kmsg.Request) []byte {
	c.correlationID++
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, c.correlationID)
}

// readResponse reads one response frame and returns its body after checking the
// correlation id. Flexible responses other than ApiVersions carry a tag byte first.
func (c *rawConn) readResponse(flexibleHeader bool) []byte {
	c.t.Helper()
	wait := rawTimeout
	if c.readTimeout > 0 {
		wait = c.readTimeout
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(wait)); err != nil {
		c.t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		c.t.Fatalf("reading a response size: %v", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		c.t.Fatalf("response size %d", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c.nc, frame); err != nil {
		c.t.Fatalf("reading a %d-byte response: %v", n, err)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.correlationID {
		c.t.Fatalf("correlation id %d, expected %d", got, c.correlationID)
	}
	body := frame[4:]
	if flexibleHeader {
		if len(body) == 0 || body[0] != 0 {
			c.t.Fatalf("flexible response header without an empty tag buffer: % x", body[:min(len(body), 8)])
		}
		body = body[1:]
	}
	return body
}

// roundTrip sends req at its set version and decodes the response.
func (c *rawConn) roundTrip(req kmsg.Request) kmsg.Response {
	c.t.Helper()
	c.write(c.frame(req))
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	body := c.readResponse(resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions))
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %s v%d response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// expectClosed checks that the broker closes the connection within closeWithin
// without sending anything.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	start := time.Now()
	if err := c.nc.SetReadDeadline(start.Add(closeWithin)); err != nil {
		c.t.Fatal(err)
	}
	got, err := io.ReadAll(c.nc)
	switch {
	case len(got) > 0:
		c.t.Fatalf("expected the connection closed without a reply, got %d bytes: % x", len(got), got[:min(len(got), 32)])
	case errors.Is(err, syscall.ECONNRESET) || err == nil: // closed: reset, or EOF (ReadAll's nil)
	default:
		c.t.Fatalf("connection not closed within %s: %v", closeWithin, err)
	}
}

// allocatedDuring returns the bytes the whole process allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// header returns a request header: api key, version, correlation id and client id
// "raw" (request header v1).
func header(key, version int16, correlationID int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, 3)
	return append(b, "raw"...)
}

// sized prefixes body with its int32 size.
func sized(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// recordBatch returns a valid uncompressed RecordBatch v2 with baseOffset 0 holding
// values, each with a key and a header. Length and the CRC-32C (Castagnoli, over bytes
// 21 onwards, from attributes) are computed here.
func recordBatch(values ...string) []byte {
	var records []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(recordKey(i)), Value: []byte(v),
			Headers: []kmsg.Header{{Key: "raw", Value: []byte("yes")}}}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the zero Length took one varint byte
		records = r.AppendTo(records)
	}
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(values)), Records: records,
	}
	raw := batch.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// legacyMessageSet returns a magic-1 message set holding one message (the pre-0.11
// format: offset, size, CRC-32 (IEEE), magic, attributes, timestamp, key, value).
func legacyMessageSet(value string) []byte {
	msg := []byte{1, 0} // magic 1, attributes
	msg = binary.BigEndian.AppendUint64(msg, uint64(time.Now().UnixMilli()))
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff) // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	crc := crc32.ChecksumIEEE(msg)
	out := binary.BigEndian.AppendUint64(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(msg)))
	out = binary.BigEndian.AppendUint32(out, crc)
	return append(out, msg...)
}

// produceRequest returns a Produce request of version, with acks, for one partition.
func produceRequest(version, acks int16, topic string, partition int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// produceResult is one partition's answer to a produce request.
func produceResult(t *testing.T, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response with %d topics: %+v", len(pr.Topics), pr)
	}
	return pr.Topics[0].Partitions[0]
}

// badInputEnv is the broker under attack and the well-behaved clients beside it.
type badInputEnv struct {
	c *Cluster
	// raw is the broker's Kafka address, for hand-framed connections.
	raw string
	// prod and cons produce to and consume from survivorTopic between cases.
	prod, cons *kgo.Client
	// survivors are the values acknowledged on survivorTopic so far, in order.
	survivors []string
	// consumed counts the survivors read back by cons.
	consumed int
}

const survivorTopic = "survivor"

// checkServing checks that a new connection gets an ApiVersions answer and that a
// record produced now is acknowledged and consumed, in order after the earlier ones.
func (e *badInputEnv) checkServing(t *testing.T, after string) {
	t.Helper()
	rc := dialRaw(t, e.raw)
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "petrel-integration", "1"
	av := rc.roundTrip(req).(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
		t.Fatalf("after %s: ApiVersions error %d with %d keys", after, av.ErrorCode, len(av.ApiKeys))
	}
	rc.nc.Close()

	ctx := testContext(t)
	value := fmt.Sprintf("%d after %s", len(e.survivors), after)
	if err := e.prod.ProduceSync(ctx, kgo.StringRecord(value)).FirstErr(); err != nil {
		t.Fatalf("after %s: produce: %v", after, err)
	}
	e.survivors = append(e.survivors, value)
	for e.consumed < len(e.survivors) {
		fs := e.cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("after %s: consume: %v", after, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(e.consumed) || e.consumed >= len(e.survivors) || string(r.Value) != e.survivors[e.consumed] {
				t.Fatalf("after %s: consumed %q at offset %d, expected record %d", after, r.Value, r.Offset, e.consumed)
			}
			e.consumed++
		})
	}
}

func TestBadInput(t *testing.T) {
	c := StartCluster(t, 1,
		WithProperty("auto.create.topics.enable", "false"),
		WithProperty("socket.request.max.bytes", fmt.Sprint(maxRequestBytes)))
	c.CreateTopic(t, survivorTopic, 1, nil)
	e := &badInputEnv{
		c:    c,
		raw:  c.Addr(0),
		prod: c.Client(t, kgo.DefaultProduceTopic(survivorTopic)),
		cons: c.Client(t, kgo.ConsumeTopics(survivorTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())),
	}
	e.checkServing(t, "start")

	t.Run("framing", func(t *testing.T) { testBadFraming(t, e) })
	t.Run("versions", func(t *testing.T) { testBadVersions(t, e) })
	t.Run("admin", func(t *testing.T) { testBadAdmin(t, e) })
	t.Run("produce", func(t *testing.T) { testBadProduce(t, e) })

	t.Run("nothing lost", func(t *testing.T) {
		cl := c.Client(t, kgo.ConsumeTopics(survivorTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ctx := testContext(t)
		var got []string
		for len(got) < len(e.survivors) {
			fs := cl.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d of %d records: %v", len(got), len(e.survivors), err)
			}
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		if !slices.Equal(got, e.survivors) {
			t.Fatalf("read back %q\nexpected %q", got, e.survivors)
		}
		end, err := kadm.NewClient(cl).ListEndOffsets(ctx, survivorTopic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := end.Lookup(survivorTopic, 0); o.Offset != int64(len(e.survivors)) {
			t.Fatalf("end offset %d, expected %d: something was appended that was not acknowledged", o.Offset, len(e.survivors))
		}
	})
}

// testBadFraming sends broken frames on raw sockets: each connection must be closed
// quickly, without allocating what a lying size asks for.
func testBadFraming(t *testing.T, e *badInputEnv) {
	size := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	cases := []struct {
		name string
		send []byte
		// halfClose ends the client's side after sending (a torn request).
		halfClose bool
	}{
		{name: "truncated: size 100, 10 bytes sent, then closed", send: append(size(100), header(3, 1, 1)[:10]...), halfClose: true},
		{name: "truncated inside the size prefix", send: []byte{0, 0}, halfClose: true},
		{name: "size 0x7fffffff", send: append(size(0x7fffffff), header(3, 1, 1)...)},
		{name: "size socket.request.max.bytes+1", send: append(size(maxRequestBytes+1), header(3, 1, 1)...)},
		{name: "size -1", send: append(size(0xffffffff), header(3, 1, 1)...)},
		{name: "size -2147483648", send: append(size(0x80000000), header(3, 1, 1)...)},
		{name: "size 0", send: size(0)},
		{name: "size 3, shorter than a header", send: []byte{0, 0, 0, 3, 0, 3, 0}},
		{name: "client_id runs past the frame", send: sized(append(header(3, 1, 1)[:8], 0x01, 0xf4))},
		{name: "Metadata v1 claiming 2^31-1 topics in a 30-byte frame",
			send: sized(append(append(header(3, 1, 1), 0x7f, 0xff, 0xff, 0xff), bytes.Repeat([]byte{0}, 10)...))},
		{name: "Metadata v9 compact topics array claiming 2^31-1 entries",
			send: sized(append(append(header(3, 9, 1), 0, 0xff, 0xff, 0xff, 0xff, 0x07), bytes.Repeat([]byte{0}, 10)...))},
		{name: "Metadata v9 tagged field claiming 2 GiB",
			send: sized(append(header(3, 9, 1), 0x01, 0x00, 0xff, 0xff, 0xff, 0xff, 0x07, 1, 2, 3))},
		{name: "Produce v9 records claiming 2 GiB",
			send: sized(append(header(0, 9, 1), 0, // header tags
				0, 0xff, 0xff, 0, 0, 0x27, 0x10, // transactional_id null, acks -1, timeout 10000
				2, 2, 'a', 2, 0, 0, 0, 0, // 1 topic "a", 1 partition: 0
				0xff, 0xff, 0xff, 0xff, 0x07, 1, 2, 3))}, // records: compact bytes of 2^31-2
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, e.raw)
			allocated := allocatedDuring(func() {
				rc.write(tc.send)
				if tc.halfClose {
					if err := rc.nc.(*net.TCPConn).CloseWrite(); err != nil {
						t.Fatal(err)
					}
				}
				rc.expectClosed()
			})
			t.Logf("the process allocated %d KiB meanwhile", allocated>>10)
			if allocated > allocationLimit {
				t.Errorf("the process allocated %d MiB while handling %d bytes", allocated>>20, len(tc.send))
			}
			e.checkServing(t, tc.name)
		})
	}
}

// testBadVersions covers unknown keys, versions outside the advertised range (closed
// without a reply) and the ApiVersions downgrade reply.
func testBadVersions(t *testing.T, e *badInputEnv) {
	closes := []struct {
		name  string
		frame func(rc *rawConn) []byte
	}{
		{"unknown api key 9999", func(rc *rawConn) []byte { return sized(append(header(9999, 0, 1), 0, 0)) }},
		{"Produce v99", func(rc *rawConn) []byte {
			return rc.frame(produceRequest(99, -1, survivorTopic, 0, recordBatch("v99")))
		}},
		{"Metadata v14 (above the advertised maximum)", func(rc *rawConn) []byte {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 14
			return rc.frame(req)
		}},
		{"Fetch v3 (below the advertised minimum)", func(rc *rawConn) []byte {
			req := kmsg.NewPtrFetchRequest()
			req.Version = 3
			return rc.frame(req)
		}},
		{"ListOffsets v0 (below the advertised minimum)", func(rc *rawConn) []byte {
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version = 0
			return rc.frame(req)
		}},
		{"CreateDelegationToken (not served)", func(rc *rawConn) []byte {
			req := kmsg.NewPtrCreateDelegationTokenRequest()
			req.Version = 1
			return rc.frame(req)
		}},
	}
	for _, tc := range closes {
		t.Run(tc.name, func(t *testing.T) {
			rc := dialRaw(t, e.raw)
			rc.write(tc.frame(rc))
			rc.expectClosed()
			e.checkServing(t, tc.name)
		})
	}

	t.Run("ApiVersions v99 gets the v0 downgrade reply", func(t *testing.T) {
		rc := dialRaw(t, e.raw)
		rc.correlationID = 77
		rc.write(sized(header(18, 99, 77)))
		body := rc.readResponse(false)
		down := kmsg.NewPtrApiVersionsResponse()
		down.Version = 0
		if err := down.ReadFrom(body); err != nil {
			t.Fatalf("the reply is not a v0 ApiVersions body: %v (% x)", err, body)
		}
		if len(body) != 2+4+6 {
			t.Errorf("the reply is %d bytes, the v0 layout with one key is 12: % x", len(body), body)
		}
		if down.ErrorCode != kerr.UnsupportedVersion.Code || len(down.ApiKeys) != 1 || down.ApiKeys[0].ApiKey != 18 {
			t.Fatalf("downgrade reply: error %d keys %+v; expected error 35 and only key 18", down.ErrorCode, down.ApiKeys)
		}
		// The connection stays usable: retry at the advertised maximum, as kgo does.
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = down.ApiKeys[0].MaxVersion, "petrel-integration", "1"
		full := rc.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if full.ErrorCode != 0 {
			t.Fatalf("ApiVersions v%d after the downgrade: error %d", req.Version, full.ErrorCode)
		}
		i := slices.IndexFunc(full.ApiKeys, func(k kmsg.ApiVersionsResponseApiKey) bool { return k.ApiKey == 18 })
		if i < 0 || full.ApiKeys[i].MinVersion != down.ApiKeys[0].MinVersion || full.ApiKeys[i].MaxVersion != down.ApiKeys[0].MaxVersion {
			t.Fatalf("downgrade range %+v differs from the advertised key 18 %+v", down.ApiKeys[0], full.ApiKeys)
		}
		if down.ApiKeys[0].MinVersion != 0 || down.ApiKeys[0].MaxVersion < 3 {
			t.Errorf("key 18 range %d-%d, expected 0 to at least 3", down.ApiKeys[0].MinVersion, down.ApiKeys[0].MaxVersion)
		}
		e.checkServing(t, "ApiVersions v99")
	})
}

// testBadAdmin covers CreateTopics validation and producing to a missing topic with
// auto-creation off.
func testBadAdmin(t *testing.T, e *badInputEnv) {
	adm := e.c.Admin(t)
	ctx := testContext(t)
	expectCreateError := func(t *testing.T, partitions int32, rf int16, configs map[string]*string, want *kerr.Error, topics ...string) {
		t.Helper()
		resps, err := adm.CreateTopics(ctx, partitions, rf, configs, topics...)
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		for _, name := range topics {
			r, ok := resps[name]
			if !ok {
				t.Errorf("no answer for topic %q", name)
				continue
			}
			if !errors.Is(r.Err, want) {
				t.Errorf("CreateTopics %q (partitions %d, RF %d, configs %v): %v, expected %v", name, partitions, rf, configs, r.Err, want)
			}
		}
	}
	t.Run("invalid topic names", func(t *testing.T) {
		expectCreateError(t, 1, 1, nil, kerr.InvalidTopicException, "", ".", "..", "a/b", strings.Repeat("x", 250), "sp ace", "nul\x00")
		// '.' and '_' collide (Kafka metric names merge them).
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, "collide.me")
		if err != nil || resp.Err != nil {
			t.Fatalf("CreateTopic collide.me: %v %v", err, resp.Err)
		}
		expectCreateError(t, 1, 1, nil, kerr.InvalidTopicException, "collide_me")
	})
	t.Run("partitions 0 and -2", func(t *testing.T) {
		expectCreateError(t, 0, 1, nil, kerr.InvalidPartitions, "zero-partitions")
		expectCreateError(t, -2, 1, nil, kerr.InvalidPartitions, "minus-two-partitions")
	})
	t.Run("replication factor 3 on one broker", func(t *testing.T) {
		expectCreateError(t, 1, 3, nil, kerr.InvalidReplicationFactor, "rf-three")
	})
	t.Run("unknown config", func(t *testing.T) {
		v := "1"
		expectCreateError(t, 1, 1, map[string]*string{"no.such.config": &v}, kerr.InvalidConfig, "bad-config")
	})
	t.Run("nothing was created", func(t *testing.T) {
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := topics.Names()
		slices.Sort(names)
		if want := []string{"collide.me", survivorTopic}; !slices.Equal(names, want) {
			t.Fatalf("topics %q, expected %q", names, want)
		}
	})
	e.checkServing(t, "invalid CreateTopics")

	t.Run("produce to a missing topic with auto-creation off", func(t *testing.T) {
		const missing = "never-created"
		// A producer's Metadata request asks for auto-creation; the broker must refuse.
		req := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(missing)
		req.Topics, req.AllowAutoTopicCreation = append(req.Topics, mt), true
		md, err := req.RequestWith(ctx, e.prod)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("Metadata for %s with AllowAutoTopicCreation: %+v, expected UNKNOWN_TOPIC_OR_PARTITION", missing, md.Topics)
		}

		// kgo's producer gives up after its unknown-topic retries.
		cl := e.c.Client(t, kgo.DefaultProduceTopic(missing), kgo.RecordDeliveryTimeout(15*time.Second))
		err = cl.ProduceSync(testContext(t), kgo.StringRecord("lost")).FirstErr()
		if !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("kgo produce to %s: %v, expected %v", missing, err, kerr.UnknownTopicOrPartition)
		}

		// A raw produce request names the exact partition error.
		resp, err := e.prod.Request(ctx, produceRequest(9, -1, missing, 0, recordBatch("lost")))
		if err != nil {
			t.Fatal(err)
		}
		if p := produceResult(t, resp); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("Produce to %s: error %d, expected %d", missing, p.ErrorCode, kerr.UnknownTopicOrPartition.Code)
		}
		topics, err := adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if topics.Has(missing) {
			t.Errorf("%s was created although auto.create.topics.enable=false", missing)
		}
	})
	e.checkServing(t, "produce to a missing topic")
}

// testBadProduce sends hostile batches at Produce v9 through kgo's client.Request, with
// valid batches in between, and checks that only the valid ones were appended.
func testBadProduce(t *testing.T, e *badInputEnv) {
	const topic = "bad-batches"
	maxBytes := "1000"
	e.c.CreateTopic(t, topic, 1, map[string]*string{"max.message.bytes": &maxBytes})
	versions := namedTopicVersions() // the fetches below name their topic
	versions.SetMaxKeyVersion(int16(kmsg.Produce), 9)
	cl := e.c.Client(t, kgo.MaxVersions(versions))
	ctx := testContext(t)

	var valid []string // values appended to topic, in offset order
	produce := func(t *testing.T, records []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		resp, err := cl.Request(ctx, produceRequest(9, -1, topic, 0, records))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		if v := resp.GetVersion(); v != 9 {
			t.Fatalf("kgo sent Produce v%d, expected v9", v)
		}
		return produceResult(t, resp)
	}
	produceValid := func(t *testing.T, values ...string) {
		t.Helper()
		p := produce(t, recordBatch(values...))
		if p.ErrorCode != 0 || p.BaseOffset != int64(len(valid)) {
			t.Fatalf("valid batch: error %d base offset %d, expected 0 and %d (only acknowledged batches may be appended)", p.ErrorCode, p.BaseOffset, len(valid))
		}
		valid = append(valid, values...)
	}
	produceValid(t, "valid-0", "valid-1")

	flipped := recordBatch("flipped")
	flipped[18] ^= 0x40 // inside the CRC field (bytes 17-20)
	tooLarge := recordBatch(strings.Repeat("L", 2000))
	hostile := []struct {
		name    string
		records []byte
		want    *kerr.Error
	}{
		{"flipped CRC byte", flipped, kerr.CorruptMessage},
		{"flipped payload byte", func() []byte { b := recordBatch("payload"); b[len(b)-5] ^= 1; return b }(), kerr.CorruptMessage},
		{"magic 1 message set", legacyMessageSet(strings.Repeat("m", 100)), kerr.InvalidRecord},
		{"magic 1 in a v2 batch header", func() []byte { b := recordBatch("magic"); b[16] = 1; return b }(), kerr.InvalidRecord},
		{"larger than max.message.bytes", tooLarge, kerr.MessageTooLarge},
		{"two batches", append(recordBatch("one"), recordBatch("two")...), kerr.InvalidRecord},
		{"base offset 5", func() []byte { b := recordBatch("based"); binary.BigEndian.PutUint64(b, 5); return b }(), kerr.InvalidRecord},
		{"length past the records", func() []byte { b := recordBatch("long"); return b[:len(b)-3] }(), kerr.InvalidRecord},
	}
	for i, tc := range hostile {
		t.Run(tc.name, func(t *testing.T) {
			p := produce(t, tc.records)
			if p.ErrorCode != tc.want.Code {
				got := kerr.ErrorForCode(p.ErrorCode)
				t.Errorf("Produce v9 with %s: error %d (%v), expected %d (%v); message %v", tc.name, p.ErrorCode, got, tc.want.Code, tc.want, p.ErrorMessage)
			}
			produceValid(t, fmt.Sprintf("valid-after-%d", i))
		})
	}

	t.Run("acks=5", func(t *testing.T) {
		// kgo's client.Request rewrites acks to the client's setting, so this one goes
		// out on a raw socket.
		rc := dialRaw(t, e.raw)
		p := produceResult(t, rc.roundTrip(produceRequest(9, 5, topic, 0, recordBatch("acks-5"))))
		if p.ErrorCode != kerr.InvalidRequiredAcks.Code {
			t.Errorf("Produce v9 with acks=5: error %d, expected %d (INVALID_REQUIRED_ACKS)", p.ErrorCode, kerr.InvalidRequiredAcks.Code)
		}
		produceValid(t, "valid-after-acks-5")
	})

	t.Run("fetch past the end", func(t *testing.T) {
		for _, offset := range []int64{int64(len(valid)) + 100, -5} {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
			req.SessionID, req.SessionEpoch = 0, -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = topic
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = 0, offset, 1<<20, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("fetch response: %+v", resp)
			}
			if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.OffsetOutOfRange.Code {
				t.Errorf("Fetch v%d at offset %d (end %d): error %d, expected %d (OFFSET_OUT_OF_RANGE)", resp.Version, offset, len(valid), p.ErrorCode, kerr.OffsetOutOfRange.Code)
			}
		}
	})

	t.Run("only valid batches were appended", func(t *testing.T) {
		cons := e.c.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		var got []string
		for len(got) < len(valid) {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatalf("after %d records: %v", len(got), err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset != int64(len(got)) {
					t.Fatalf("record %q at offset %d, expected %d", r.Value, r.Offset, len(got))
				}
				got = append(got, string(r.Value))
			})
		}
		if !slices.Equal(got, valid) {
			t.Fatalf("read %q, expected %q", got, valid)
		}
		end, err := kadm.NewClient(cons).ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := end.Lookup(topic, 0); o.Offset != int64(len(valid)) {
			t.Fatalf("end offset %d, expected %d: a refused batch was appended", o.Offset, len(valid))
		}
	})
	e.checkServing(t, "hostile batches")
}
