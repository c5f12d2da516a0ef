package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cannedFetchVersion is the one Fetch version the canned broker speaks: v11, the last
// one that names topics (no topic IDs) and is not flexible, so that its responses are
// a few fixed fields around each partition's record set.
const cannedFetchVersion = 11

// cannedMaxRequest bounds a request frame the canned broker reads: Kafka's
// socket.request.max.bytes default. A producer's request carries a batch of up to 1 MB
// for each partition of the broker it writes to, several MiB with --partitions.
const cannedMaxRequest = 100 << 20

// cannedBroker is a one-node Kafka broker that costs nothing to read from: every Fetch
// is answered from record batches encoded once in memory, the same bytes each time
// with only each batch's base offset rewritten to follow the requested offset (the
// base offset is outside the batch CRC). It answers ApiVersions, Metadata, ListOffsets
// and Fetch for one topic and nothing else; it exists to measure a client's own
// ceiling (`perf consume-ceiling`), not to be a broker.
type cannedBroker struct {
	ln         net.Listener
	topic      string
	partitions int32
	canned     [][]byte
	batchAt    [][]int // start of every batch in canned[p]
	perBatch   int64   // records per batch

	mu      sync.Mutex // serialises writes of the canned buffers, whose offsets are rewritten
	wg      sync.WaitGroup
	connsMu sync.Mutex // guards conns; never held while writing, so close cannot wait on a stuck write
	conns   map[net.Conn]struct{}
	closed  bool // under connsMu: a connection accepted after close is closed at once

	produced atomic.Int64 // records acknowledged by Produce: the next base offset

	// sync, when set, stores every Produce's batches and answers each after fsyncs
	// covering them (`perf produce-ceiling --fsync-dir`); nil answers at once.
	sync *syncStore

	// cluster, when set before start, makes the broker one node of a canned cluster
	// (`perf produce-ceiling --replicas`); nil: the only node.
	cluster *cannedCluster
}

// cannedCluster is a canned broker's view of the cluster it is one node of: every
// node's Kafka address by node id, each partition led by one node and replicated on
// every node.
type cannedCluster struct {
	addrs []string
}

// leader returns the node that leads partition p.
func (cl *cannedCluster) leader(p int32) int32 { return p % int32(len(cl.addrs)) }

// startCannedBroker listens on 127.0.0.1:0 and serves topic with partitions, each
// Fetch answer carrying per partition as many whole batches of batchRecords records of
// recordSize bytes as fit in partitionBytes (at least one). sync, when not nil, is the
// store every Produce is kept in and answered behind (closed with the broker); it has a
// log per partition.
func startCannedBroker(topic string, partitions, recordSize, batchRecords, partitionBytes int, sync *syncStore) (*cannedBroker, error) {
	b, err := newCannedBroker(topic, partitions, recordSize, batchRecords, partitionBytes, sync)
	if err == nil {
		b.start()
	}
	return b, err
}

// newCannedBroker is startCannedBroker without accepting connections yet: start does.
func newCannedBroker(topic string, partitions, recordSize, batchRecords, partitionBytes int, sync *syncStore) (*cannedBroker, error) {
	if partitions < 1 || recordSize < 0 || batchRecords < 1 {
		return nil, fmt.Errorf("canned broker: bad partitions %d, record size %d or batch records %d", partitions, recordSize, batchRecords)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &cannedBroker{ln: ln, topic: topic, partitions: int32(partitions), perBatch: int64(batchRecords), conns: map[net.Conn]struct{}{}, sync: sync}
	batch := cannedBatch(batchRecords, recordSize)
	for range partitions {
		var buf []byte
		var at []int
		for len(at) == 0 || len(buf)+len(batch) <= partitionBytes {
			at = append(at, len(buf))
			buf = append(buf, batch...)
		}
		b.canned = append(b.canned, buf)
		b.batchAt = append(b.batchAt, at)
	}
	return b, nil
}

// start accepts connections.
func (b *cannedBroker) start() {
	b.wg.Add(1)
	go b.accept()
}

// addr is the broker's host:port.
func (b *cannedBroker) addr() string { return b.ln.Addr().String() }

// close stops the listener and every connection, and waits for their goroutines. The
// store closes first: an answer waiting for an fsync or a follower that will not come
// ends with it.
func (b *cannedBroker) close() {
	_ = b.ln.Close()
	b.connsMu.Lock()
	b.closed = true
	for c := range b.conns {
		_ = c.Close()
	}
	b.connsMu.Unlock()
	if b.sync != nil {
		b.sync.close()
	}
	b.wg.Wait()
}

func (b *cannedBroker) accept() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.connsMu.Lock()
		if b.closed {
			b.connsMu.Unlock()
			_ = c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.connsMu.Unlock()
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			_ = b.serve(c) // a client closing its connection ends it
			b.connsMu.Lock()
			delete(b.conns, c)
			b.connsMu.Unlock()
			_ = c.Close()
		}()
	}
}

// cannedBatch encodes one v2 record batch (no compression) of n records of size value
// bytes each, base offset 0.
func cannedBatch(n, size int) []byte {
	value := randomPayload(size)
	var records []byte
	for i := range n {
		var rec []byte
		rec = append(rec, 0)                        // attributes
		rec = binary.AppendVarint(rec, 0)           // timestamp delta
		rec = binary.AppendVarint(rec, int64(i))    // offset delta
		rec = binary.AppendVarint(rec, -1)          // null key
		rec = binary.AppendVarint(rec, int64(size)) // value length
		rec = append(rec, value...)                 // value
		rec = binary.AppendVarint(rec, 0)           // no headers
		records = binary.AppendVarint(records, int64(len(rec)))
		records = append(records, rec...)
	}
	now := time.Now().UnixMilli()
	b := make([]byte, 8, 61+len(records))             // base offset 0
	b = binary.BigEndian.AppendUint32(b, 0)           // batch length, set below
	b = binary.BigEndian.AppendUint32(b, 0)           // partition leader epoch
	b = append(b, 2)                                  // magic
	b = binary.BigEndian.AppendUint32(b, 0)           // CRC, set below
	b = binary.BigEndian.AppendUint16(b, 0)           // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(n-1)) // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(now)) // base timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(now)) // max timestamp
	b = binary.BigEndian.AppendUint64(b, ^uint64(0))  // producer id -1
	b = binary.BigEndian.AppendUint16(b, ^uint16(0))  // producer epoch -1
	b = binary.BigEndian.AppendUint32(b, ^uint32(0))  // base sequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(n))   // record count
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[batchLengthAt:], uint32(len(b)-batchLogOverhead))
	binary.BigEndian.PutUint32(b[17:], segment.CRC32C(b[21:]))
	return b
}

// serve answers the requests of one connection in order.
func (b *cannedBroker) serve(c net.Conn) error {
	var in, out []byte
	var answers chan syncedAnswer
	if b.sync != nil {
		answers = make(chan syncedAnswer, 64)
		done := make(chan struct{})
		go b.syncedWriter(c, answers, done)
		defer func() { close(answers); <-done }()
	}
	for {
		req, correlation, err := readCannedRequest(c, &in)
		if err != nil {
			return err
		}
		key := req.Key()
		out = binary.BigEndian.AppendUint32(out[:0], 0) // frame size, set below
		out = binary.BigEndian.AppendUint32(out, correlation)
		if fetch, ok := req.(*kmsg.FetchRequest); ok {
			if answers != nil {
				return errors.New("canned broker: no Fetch when it fsyncs")
			}
			if err := b.writeFetch(c, out, fetch); err != nil {
				return err
			}
			continue
		}
		resp, err := b.answer(req)
		if err != nil {
			return err
		}
		out = appendCannedAnswer(out, key, resp)
		if answers != nil {
			var waits []syncWait
			if produce, ok := req.(*kmsg.ProduceRequest); ok {
				if waits, err = b.sync.appendBatches(produce); err != nil {
					return err
				}
			}
			answers <- syncedAnswer{frame: append([]byte(nil), out...), waits: waits}
			continue
		}
		if _, err := c.Write(out); err != nil {
			return err
		}
	}
}

// readCannedRequest reads one request frame from r into *in (grown when needed) and
// decodes it: the request and its correlation id.
func readCannedRequest(r io.Reader, in *[]byte) (kmsg.Request, uint32, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, 0, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 8 || n > cannedMaxRequest {
		return nil, 0, fmt.Errorf("request frame of %d bytes", n)
	}
	if cap(*in) < n {
		*in = make([]byte, n)
	}
	frame := (*in)[:n]
	if _, err := io.ReadFull(r, frame); err != nil {
		return nil, 0, err
	}
	key, version := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	correlation := binary.BigEndian.Uint32(frame[4:])
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, 0, fmt.Errorf("request key %d", key)
	}
	req.SetVersion(version)
	rd := kbin.Reader{Src: frame[8:]}
	rd.NullableString() // client id
	if req.IsFlexible() {
		kmsg.SkipTags(&rd)
	}
	if err := rd.Complete(); err != nil {
		return nil, 0, err
	}
	if err := req.ReadFrom(rd.Src); err != nil {
		return nil, 0, err
	}
	return req, correlation, nil
}

// appendCannedAnswer appends resp, the answer to a request of key, to out, which holds
// the frame size (set here) and the correlation id.
func appendCannedAnswer(out []byte, key int16, resp kmsg.Response) []byte {
	if resp.IsFlexible() && key != kmsg.ApiVersions.Int16() {
		out = append(out, 0) // the response header's tagged fields
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// answer builds the response to a request other than Fetch.
func (b *cannedBroker) answer(req kmsg.Request) (kmsg.Response, error) {
	switch req := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{
			{ApiKey: kmsg.Fetch.Int16(), MinVersion: cannedFetchVersion, MaxVersion: cannedFetchVersion},
			{ApiKey: kmsg.ListOffsets.Int16(), MinVersion: 1, MaxVersion: 4},
			{ApiKey: kmsg.Metadata.Int16(), MinVersion: 4, MaxVersion: 8},
			{ApiKey: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: req.Version},
			{ApiKey: kmsg.Produce.Int16(), MinVersion: 3, MaxVersion: 9},
			{ApiKey: kmsg.InitProducerID.Int16(), MinVersion: 0, MaxVersion: 4},
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		cl := b.cluster
		if cl == nil {
			cl = &cannedCluster{addrs: []string{b.addr()}}
		}
		var replicas []int32
		for id, addr := range cl.addrs {
			host, port, _ := net.SplitHostPort(addr)
			p, _ := strconv.Atoi(port)
			resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: int32(id), Host: host, Port: int32(p)})
			replicas = append(replicas, int32(id))
		}
		resp.ControllerID = 0
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = &b.topic
		for i := range b.partitions {
			part := kmsg.NewMetadataResponseTopicPartition()
			part.Partition, part.Leader, part.Replicas, part.ISR = i, cl.leader(i), replicas, replicas
			topic.Partitions = append(topic.Partitions, part)
		}
		for _, t := range req.Topics {
			if t.Topic != nil && *t.Topic != b.topic {
				unknown := kmsg.NewMetadataResponseTopic()
				unknown.Topic, unknown.ErrorCode = t.Topic, kerr.UnknownTopicOrPartition.Code
				resp.Topics = append(resp.Topics, unknown)
			}
		}
		resp.Topics = append(resp.Topics, topic)
		return resp, nil
	case *kmsg.ListOffsetsRequest:
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.Timestamp, rp.Offset = p.Partition, -1, 0
				if p.Timestamp != -2 {
					rp.Offset = cannedHighWatermark
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.InitProducerIDRequest:
		resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = 1, 0
		return resp, nil
	case *kmsg.ProduceRequest:
		// Every batch acknowledged at once, stored nowhere: what a broker that costs
		// nothing would answer (`perf produce-ceiling`).
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.LogAppendTime, rp.LogStartOffset = p.Partition, -1, 0
				n := int64(1)
				if len(p.Records) >= 61 { // a v2 batch header: the record count at byte 57
					n = int64(binary.BigEndian.Uint32(p.Records[57:61]))
				}
				rp.BaseOffset = b.produced.Add(n) - n
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	return nil, fmt.Errorf("canned broker: no answer for %s", kmsg.NameForKey(req.Key()))
}

// cannedHighWatermark is every partition's high watermark: far beyond any run.
const cannedHighWatermark = 1 << 50

// writeFetch writes the Fetch v11 response to req after hdr (size and correlation id):
// per partition its canned batches from the requested offset, partitions in request
// order while they fit in the request's MaxBytes (the first always), the rest empty.
func (b *cannedBroker) writeFetch(c net.Conn, hdr []byte, req *kmsg.FetchRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := hdr
	out = binary.BigEndian.AppendUint32(out, 0) // throttle time
	out = binary.BigEndian.AppendUint16(out, 0) // error code
	out = binary.BigEndian.AppendUint32(out, 0) // session id: no session
	out = binary.BigEndian.AppendUint32(out, uint32(len(req.Topics)))
	var chunks net.Buffers // encoded fields and record sets, in order
	total := 0
	for _, t := range req.Topics {
		out = binary.BigEndian.AppendUint16(out, uint16(len(t.Topic)))
		out = append(out, t.Topic...)
		out = binary.BigEndian.AppendUint32(out, uint32(len(t.Partitions)))
		for _, p := range t.Partitions {
			var records []byte
			code := int16(0)
			switch {
			case t.Topic != b.topic || p.Partition < 0 || p.Partition >= b.partitions:
				code = kerr.UnknownTopicOrPartition.Code
			case p.FetchOffset < 0 || p.FetchOffset > cannedHighWatermark:
				code = kerr.OffsetOutOfRange.Code
			case total == 0 || total+len(b.canned[p.Partition]) <= int(req.MaxBytes):
				records = b.canned[p.Partition]
				for i, at := range b.batchAt[p.Partition] {
					binary.BigEndian.PutUint64(records[at:], uint64(p.FetchOffset+int64(i)*b.perBatch))
				}
				total += len(records)
			}
			out = binary.BigEndian.AppendUint32(out, uint32(p.Partition))
			out = binary.BigEndian.AppendUint16(out, uint16(code))
			out = binary.BigEndian.AppendUint64(out, cannedHighWatermark) // high watermark
			out = binary.BigEndian.AppendUint64(out, cannedHighWatermark) // last stable offset
			out = binary.BigEndian.AppendUint64(out, 0)                   // log start offset
			out = binary.BigEndian.AppendUint32(out, 0)                   // no aborted transactions
			out = binary.BigEndian.AppendUint32(out, ^uint32(0))          // preferred read replica -1
			out = binary.BigEndian.AppendUint32(out, uint32(len(records)))
			if len(records) > 0 {
				chunks = append(chunks, out, records)
				out = out[len(out):] // the next fields go after these, in the same array
			}
		}
	}
	chunks = append(chunks, out)
	size := -4
	for _, ch := range chunks {
		size += len(ch)
	}
	if size < 0 {
		return errors.New("canned broker: empty response")
	}
	binary.BigEndian.PutUint32(chunks[0], uint32(size))
	_, err := chunks.WriteTo(c)
	return err
}
