package broker

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/segment"
	"github.com/petrel-broker/petrel/shareleader"
	"github.com/petrel-broker/petrel/tiered"
)

// remoteReaderMaxPending is Kafka's remote.log.reader.max.pending.tasks default: the
// reads that may wait for a remote reader goroutine; a read beyond it answers its
// partition with no records.
const remoteReaderMaxPending = 100

// remoteReads is the read side of the remote log manager (KIP-405): consumers' and
// share consumers' fetches below the local log start (replication.RemoteFetcher),
// time lookups and followers' auxiliary state (replication.RemoteLog), on
// remote.log.reader.threads goroutines over a tiered.Reader. Its object store client
// tries each call once: a store that is down answers KAFKA_STORAGE_ERROR at once and
// the client retries the fetch, where the SDK's retries would outlast
// remote.fetch.max.wait.ms and answer nothing.
type remoteReads struct {
	b       *Broker
	reader  *tiered.Reader
	maxWait time.Duration
	// queue feeds the reader goroutines; they stop with the broker.
	queue chan func()
	// downloads run the caches' object store reads, as many at once as there are
	// reader goroutines, each bounded by remoteCallTimeout, past the wait of the fetch
	// that started them (so that a store slower than remote.fetch.max.wait.ms still
	// fills the caches for the next fetch); they end with the broker.
	downloads *tiered.Downloads
}

var (
	_ replication.RemoteFetcher = (*remoteReads)(nil)
	_ replication.RemoteLog     = (*remoteReads)(nil)
)

// newRemoteReads returns the read side over a store client made from cfg, with its
// caches under the data directory; start runs its goroutines.
func newRemoteReads(b *Broker, cfg tiered.S3Config) (*remoteReads, error) {
	cfg.MaxAttempts = 1
	storage, err := tiered.NewS3Storage(cfg)
	if err != nil {
		return nil, err
	}
	downloads := tiered.NewDownloads(int(b.cfg.int64Value("remote.log.reader.threads")), remoteCallTimeout)
	chunks, err := tiered.NewChunkCache(filepath.Join(b.cfg.DataDir, "remote-cache"),
		b.cfg.int64Value(config.RemoteChunkSizeProperty), b.cfg.int64Value(config.RemoteChunkCacheSizeProperty), downloads)
	if err != nil {
		return nil, err
	}
	r := &remoteReads{b: b, maxWait: b.cfg.durationMs("remote.fetch.max.wait.ms"),
		queue: make(chan func(), remoteReaderMaxPending), downloads: downloads}
	r.reader = &tiered.Reader{
		Storage: storage, Metadata: remoteLogMetadata{b}, Chunks: chunks,
		Indexes:       tiered.NewIndexCache(b.cfg.int64Value("remote.log.index.file.cache.total.size.bytes"), downloads),
		Prefetch:      r.prefetch,
		PrefetchBytes: b.cfg.int64Value(config.RemoteChunkPrefetchProperty),
		Decompress:    b.records.Decompress,
	}
	return r, nil
}

// start runs the reader goroutines until the broker stops, and ends the downloads then.
func (r *remoteReads) start() {
	r.b.goLoop("remote log downloads", func() {
		<-r.b.stop
		r.downloads.Close()
	})
	for range r.b.cfg.int64Value("remote.log.reader.threads") {
		r.b.goLoop("remote log reader", func() {
			for {
				select {
				case fn := <-r.queue:
					fn()
				case <-r.b.stop:
					return
				}
			}
		})
	}
}

// Go queues fn for a reader goroutine; false when the queue is full.
func (r *remoteReads) Go(fn func()) bool {
	select {
	case r.queue <- fn:
		return true
	default:
		return false
	}
}

// prefetch queues a read-ahead while the queue is less than half full: reads for
// fetches keep the rest.
func (r *remoteReads) prefetch(fn func()) {
	if len(r.queue) < cap(r.queue)/2 {
		r.Go(fn)
	}
}

// MaxWait is remote.fetch.max.wait.ms.
func (r *remoteReads) MaxWait() time.Duration { return r.maxWait }

// partition is lp's topic id and partition, or ErrPartitionStopped once its replica
// is gone.
func (r *remoteReads) partition(topic string, partition int32) (tiered.TopicIDPartition, *localPartition, error) {
	lp := r.b.partitions.get(topic, partition)
	if lp == nil {
		return tiered.TopicIDPartition{}, nil, fmt.Errorf("%w: %s-%d", replication.ErrPartitionStopped, topic, partition)
	}
	return tiered.TopicIDPartition{TopicID: lp.topicID, Topic: topic, Partition: partition}, lp, nil
}

// ReadRemote reads lp at offset from remote storage. Under read_committed, when the
// remote transaction indexes end before the range does, the replica's own aborted
// transactions (its producer state covers both tiers) complete the list.
func (r *remoteReads) ReadRemote(ctx context.Context, lp *replication.Partition, offset int64, maxBytes int, minOneMessage, readCommitted bool) ([]byte, []replication.AbortedTxn, error) {
	tp, _, err := r.partition(lp.Topic, lp.ID)
	if err != nil {
		return nil, nil, err
	}
	m := r.b.remoteMetrics()
	m.RemoteFetchRequest(lp.Topic)
	res, err := r.reader.Read(ctx, tiered.RemoteFetch{Partition: tp, Epochs: lp.LeaderEpochEntries(), FetchOffset: offset,
		MaxBytes: maxBytes, MinOneMessage: minOneMessage, ReadCommitted: readCommitted})
	if err != nil {
		if ctx.Err() == nil {
			m.RemoteFetchError(lp.Topic)
		}
		return nil, nil, err
	}
	m.RemoteFetched(lp.Topic, int64(len(res.Records)))
	aborted := res.Aborted
	if readCommitted && len(res.Records) > 0 && !res.AbortedComplete {
		for _, a := range lp.AbortedTransactions(offset, res.NextOffset) {
			if !slices.ContainsFunc(aborted, func(b segment.AbortedTxn) bool { return b.ProducerID == a.ProducerID && b.FirstOffset == a.FirstOffset }) {
				aborted = append(aborted, a)
			}
		}
	}
	return res.Records, aborted, nil
}

// FindOffsetByTimestamp finds the first remote record at or after logStartOffset with
// a timestamp at least ts.
func (r *remoteReads) FindOffsetByTimestamp(ctx context.Context, topic string, partition int32, ts, logStartOffset int64, epochs []segment.EpochEntry) (segment.TimestampOffset, bool, error) {
	tp, _, err := r.partition(topic, partition)
	if err != nil {
		return segment.TimestampOffset{}, false, err
	}
	return r.reader.FindOffsetByTimestamp(ctx, tp, epochs, ts, logStartOffset)
}

// FetchRemoteLogAuxState reads the leader epochs and producer snapshot at the end of
// the remote segment of leaderEpoch holding offset.
func (r *remoteReads) FetchRemoteLogAuxState(ctx context.Context, topic string, partition int32, leaderEpoch int32, offset int64) (replication.RemoteLogAuxState, error) {
	tp, _, err := r.partition(topic, partition)
	if err != nil {
		return replication.RemoteLogAuxState{}, err
	}
	next, epochs, snapshot, err := r.reader.AuxState(ctx, tp, leaderEpoch, offset)
	return replication.RemoteLogAuxState{NextOffset: next, Epochs: epochs, ProducerSnapshot: snapshot}, err
}

// shareRemoteRead is shareleader's RemoteRead: a share fetch below the local log
// start, read on the share fetch's own goroutine within remote.fetch.max.wait.ms.
func (r *remoteReads) shareRemoteRead(ctx context.Context, replica shareleader.Replica, offset int64, maxBytes int, readCommitted bool) ([]byte, []replication.AbortedTxn, error) {
	lp, ok := replica.(*replication.Partition)
	if !ok {
		return nil, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, max(r.maxWait, time.Second))
	defer cancel()
	return r.ReadRemote(ctx, lp, offset, maxBytes, true, readCommitted)
}

// remoteLog is the replicas' RemoteLog: nil without remote storage.
func (b *Broker) remoteLog() replication.RemoteLog {
	if b.remoteLogs == nil {
		return nil
	}
	return b.remoteLogs.reads
}

// shareRemoteRead is shareleader's RemoteRead: nil without remote storage.
func (b *Broker) shareRemoteRead() func(context.Context, shareleader.Replica, int64, int, bool) ([]byte, []replication.AbortedTxn, error) {
	if b.remoteLogs == nil {
		return nil
	}
	return b.remoteLogs.reads.shareRemoteRead
}
