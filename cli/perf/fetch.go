package perf

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// rawFetchMaxWait is the raw fetcher's fetch.max.wait.ms (Kafka's consumer default).
const rawFetchMaxWait = 500 * time.Millisecond

// perfFetchCommand is `petrel perf fetch`: the broker's catch-up path measured as a
// follower sees it. It sends Fetch requests from the log start of every partition,
// one in flight per leader, and counts record batches from their headers without
// decoding, checking or copying records. It is not a consumer's figure: `perf
// consume` is.
func perfFetchCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "fetch",
		Usage: "fetch record batches from the beginning as a follower does, without decoding records, and report records/s and MB/s of batches (the broker's catch-up path, not a consumer's)",
		Description: "One Fetch request in flight per partition leader, all of its partitions in each\n" +
			"request. Records are counted from each batch header; MB/s counts whole record\n" +
			"batches (headers and framing included), so it is a little above a consumer's\n" +
			"MB/s of keys and values for the same records. Batches are not checked (no CRC).\n" +
			"It reads over plain TCP connections of its own: PLAINTEXT listeners only.",
		ArgsUsage: "TOPIC",
		Flags: clientcmd.WithFlags(append([]ucli.Flag{
			&ucli.IntFlag{Name: "records", Usage: "how many records to fetch (0: until --duration); the last fetch may overshoot"},
			&ucli.DurationFlag{Name: "duration", Usage: "stop fetching after this long (0: no limit)"},
			&ucli.BoolFlag{Name: "json", Usage: "print the final figures as JSON"},
		}, fetchSizeFlags()...)...),
		Action: runPerfFetch,
	}
}

func runPerfFetch(c *ucli.Context) error {
	topic, bounds, sizes, err := parsePerfReaderArgs(c)
	if err != nil {
		return err
	}
	if c.String("command-config") != "" {
		return errors.New("perf fetch reads over plain TCP connections of its own: --command-config (TLS, SASL) is not supported; use perf consume")
	}
	errOut := clientcmd.LockErrWriter(c)
	stats := newPerfStats(false) // as perf consume: the clock includes finding the partitions
	cl, err := clientcmd.NewClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	leaders, err := rawFetchPlan(c.Context, cl, topic)
	if err != nil {
		return err
	}
	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()

	stopProgress := startProgress(errOut, progressInterval, func() string { return stats.progressLine("received") })
	fetchErr := runRawFetchers(ctx, cl, topic, leaders, sizes, bounds, stats)
	stats.finish()
	stopProgress()
	if err := writeSummary(c.App.Writer, stats.summary(), c.Bool("json")); err != nil {
		return err
	}
	return fetchErr
}

// rawPartition is one partition a raw fetcher reads, and where it is.
type rawPartition struct {
	id     int32
	epoch  int32 // the leader epoch from Metadata
	offset int64 // the next offset to fetch
}

// rawLeader is one leader's share of a topic.
type rawLeader struct {
	broker       int32
	addr         string // host:port
	fetchVersion int16  // the highest Fetch version both sides know
	topicID      [16]byte
	partitions   []*rawPartition
}

// rawFetchPlan finds each partition's leader and log start offset.
func rawFetchPlan(parent context.Context, cl *clientcmd.Client, topic string) ([]*rawLeader, error) {
	if err := clientcmd.CheckTopic(parent, cl, topic, -1, false); err != nil {
		return nil, err
	}
	ctx, cancel := cl.RequestContext(parent)
	defer cancel()
	adm := cl.Admin()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("metadata for topic %q: %w", topic, cl.Explain(err))
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return nil, fmt.Errorf("metadata for topic %q: %v", topic, td.Err)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("log start offsets of %q: %w", topic, cl.Explain(err))
	}
	versions, err := adm.ApiVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("API versions: %w", cl.Explain(err))
	}
	addrs := map[int32]string{}
	for _, b := range md.Brokers {
		addrs[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	byBroker := map[int32]*rawLeader{}
	for _, p := range td.Partitions.Sorted() {
		if p.Err != nil || p.Leader < 0 {
			return nil, fmt.Errorf("topic %q partition %d has no leader: %v", topic, p.Partition, p.Err)
		}
		start, ok := starts.Lookup(topic, p.Partition)
		if !ok || start.Err != nil {
			return nil, fmt.Errorf("log start offset of %q partition %d: %v", topic, p.Partition, start.Err)
		}
		l := byBroker[p.Leader]
		if l == nil {
			bv, ok := versions[p.Leader]
			maxVersion, known := bv.KeyMaxVersion(kmsg.Fetch.Int16())
			if !ok || bv.Err != nil || !known || addrs[p.Leader] == "" {
				return nil, fmt.Errorf("broker %d, leader of %q partition %d: no address or Fetch version known", p.Leader, topic, p.Partition)
			}
			l = &rawLeader{broker: p.Leader, addr: addrs[p.Leader], topicID: td.ID,
				fetchVersion: min(maxVersion, kmsg.NewPtrFetchRequest().MaxVersion())}
			byBroker[p.Leader] = l
		}
		l.partitions = append(l.partitions, &rawPartition{id: p.Partition, epoch: p.LeaderEpoch, offset: start.Offset})
	}
	leaders := make([]*rawLeader, 0, len(byBroker))
	for _, l := range byBroker {
		leaders = append(leaders, l)
	}
	sort.Slice(leaders, func(i, j int) bool { return leaders[i].broker < leaders[j].broker })
	return leaders, nil
}

// runRawFetchers runs one fetch loop per leader until bounds end the run, ctx ends
// (an interrupt) or a loop fails; the first failure is returned.
func runRawFetchers(parent context.Context, cl *clientcmd.Client, topic string, leaders []*rawLeader, sizes fetchSizes, bounds perfBounds, stats *perfStats) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		total    atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for _, l := range leaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := rawFetchLoop(ctx, cl, topic, l, sizes, bounds, stats, &total); err != nil {
				errOnce.Do(func() { firstErr = err })
			}
			cancel() // one loop's end (bounds reached or failed) ends the others
		}()
	}
	wg.Wait()
	if firstErr != nil && parent.Err() == nil {
		return firstErr
	}
	return nil
}

// rawFetchLoop fetches from one leader, one request at a time, as a follower does.
func rawFetchLoop(ctx context.Context, cl *clientcmd.Client, topic string, l *rawLeader, sizes fetchSizes, bounds perfBounds, stats *perfStats, total *atomic.Int64) error {
	conn, err := dialRawFetch(ctx, l, cl.Timeout())
	if err != nil {
		return err
	}
	defer conn.close()
	stopOnCancel := context.AfterFunc(ctx, func() { _ = conn.nc.SetDeadline(time.Now()) })
	defer stopOnCancel()
	lastData := time.Now()
	for !bounds.done(total.Load(), time.Since(stats.start)) {
		req := rawFetchRequest(topic, l, sizes)
		resp, err := conn.fetch(req, sizes, cl.Timeout()+rawFetchMaxWait)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fetching %s from broker %d at %s: %w", topic, l.broker, l.addr, err)
		}
		records, bytes, err := countFetched(topic, l, resp)
		if err != nil {
			return err
		}
		stats.recordConsumed(records, bytes)
		n := total.Add(records)
		if records > 0 {
			lastData = time.Now()
		} else if time.Since(lastData) >= cl.Timeout() && !bounds.done(n, time.Since(stats.start)) {
			if bounds.records > 0 {
				return fmt.Errorf("no records for %s: fetched %d of %d", cl.Timeout(), n, bounds.records)
			}
			return fmt.Errorf("no records for %s: fetched %d", cl.Timeout(), n)
		}
	}
	return nil
}

// rawFetchRequest asks for every partition of l from its next offset, as a consumer
// (replica id -1) reading uncommitted data without a fetch session. It names the
// topic both ways, so that whichever version is agreed on (names before v13, ids
// from v13) carries it.
func rawFetchRequest(topic string, l *rawLeader, sizes fetchSizes) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(rawFetchMaxWait.Milliseconds())
	req.MinBytes = 1
	req.MaxBytes = sizes.maxBytes
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = topic, l.topicID
	for _, p := range l.partitions {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.CurrentLeaderEpoch = p.id, p.offset, p.epoch
		fp.LogStartOffset, fp.PartitionMaxBytes = -1, sizes.maxPartitionBytes
		t.Partitions = append(t.Partitions, fp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

// countFetched counts a response's records and batch bytes and moves each partition's
// next offset past its last whole batch.
func countFetched(topic string, l *rawLeader, resp *kmsg.FetchResponse) (records, bytes int64, err error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return 0, 0, fmt.Errorf("fetching %s from broker %d: %w", topic, l.broker, err)
	}
	byID := make(map[int32]*rawPartition, len(l.partitions))
	for _, p := range l.partitions {
		byID[p.id] = p
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			p := byID[rp.Partition]
			if p == nil {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return records, bytes, fmt.Errorf("fetching %s partition %d at offset %d: %w", topic, rp.Partition, p.offset, err)
			}
			n, size, next, err := walkBatches(rp.RecordBatches)
			if err != nil {
				return records, bytes, fmt.Errorf("fetching %s partition %d at offset %d: %w", topic, rp.Partition, p.offset, err)
			}
			records += n
			bytes += size
			if size > 0 {
				p.offset = next
			}
		}
	}
	return records, bytes, nil
}

// Record batch header fields used by walkBatches (the v2 batch layout: base offset
// int64, batch length int32, partition leader epoch int32, magic int8, crc int32,
// attributes int16, last offset delta int32, ... record count int32 at 57).
const (
	batchLengthAt      = 8
	batchMagicAt       = 16
	batchLastDeltaAt   = 23
	batchRecordCountAt = 57
	batchHeaderBytes   = 61
	batchLogOverhead   = 12 // base offset and batch length, not counted in the length
)

// errBadBatch reports a record batch header that cannot be walked.
var errBadBatch = errors.New("malformed record batch")

// walkBatches counts the records and bytes of the whole v2 batches in b (a partial
// batch at the end, which brokers may send, is left for the next fetch) and returns
// the offset after the last one.
func walkBatches(b []byte) (records, bytes, next int64, err error) {
	for len(b) >= batchLogOverhead {
		length := int64(int32(binary.BigEndian.Uint32(b[batchLengthAt:])))
		size := batchLogOverhead + length
		if length < batchHeaderBytes-batchLogOverhead {
			return records, bytes, next, fmt.Errorf("%w: length %d", errBadBatch, length)
		}
		if int64(len(b)) < size {
			break
		}
		if magic := b[batchMagicAt]; magic != 2 {
			return records, bytes, next, fmt.Errorf("%w: magic %d", errBadBatch, magic)
		}
		base := int64(binary.BigEndian.Uint64(b))
		next = base + int64(int32(binary.BigEndian.Uint32(b[batchLastDeltaAt:]))) + 1
		records += int64(max(int32(binary.BigEndian.Uint32(b[batchRecordCountAt:])), 0))
		bytes += size
		b = b[size:]
	}
	return records, bytes, next, nil
}
