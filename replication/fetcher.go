package replication

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FetcherConfig configures follower fetching.
type FetcherConfig struct {
	BrokerID int32
	MaxWait  time.Duration // replica.fetch.wait.max.ms
	MaxBytes int32         // replica.fetch.max.bytes, per partition
	// ResponseMaxBytes is replica.fetch.response.max.bytes, a fetch's MaxBytes for
	// all its partitions together (zero: Kafka's default, 10 MiB).
	ResponseMaxBytes int32
	// Backoff is replica.fetch.backoff.ms: how long a partition the leader answered
	// with an error stays out of the fetch (fetcher_backoff.go; zero: Kafka's
	// default, 1 s).
	Backoff time.Duration
	// Connect opens a connection to a broker's Kafka listener by broker id.
	Connect func(ctx context.Context, broker int32) (*rpc.Client, error)
	// BrokerEpoch, when set, is this broker's current broker epoch (-1 before it
	// registered): the fetches are then v15, topics by the ids of the replicas
	// (Options.TopicID) and the broker epoch with each (fetcher_topic_ids.go).
	BrokerEpoch func() int64
	// Throttled, when set, is asked before a partition joins a fetch: true leaves it
	// out of this round (the follower replication throttle, KIP-73). Fetched, when
	// set, is told the bytes each partition's answer carried.
	Throttled func(topic string, partition int32) bool
	Fetched   func(topic string, partition int32, bytes int)
	Logger    hclog.Logger
}

// Fetchers runs one fetcher per source broker; each fetches all the partitions this
// broker follows from it in one Fetch request. Safe for concurrent use.
type Fetchers struct {
	cfg FetcherConfig

	mu       sync.Mutex
	fetchers map[int32]*fetcher // by leader broker id
	closed   bool
	wg       sync.WaitGroup
}

// NewFetchers returns an empty set of fetchers.
func NewFetchers(cfg FetcherConfig) *Fetchers {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 500 * time.Millisecond
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.ResponseMaxBytes <= 0 {
		cfg.ResponseMaxBytes = 10 << 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	return &Fetchers{cfg: cfg, fetchers: map[int32]*fetcher{}}
}

// Follow makes p fetch from leader (moving it from any other fetcher). The partition
// truncates by leader epoch before its first fetch.
func (fs *Fetchers) Follow(p *Partition, leader int32) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return
	}
	for id, f := range fs.fetchers {
		if id != leader {
			f.remove(p)
		}
	}
	f := fs.fetchers[leader]
	if f == nil {
		f = &fetcher{fs: fs, leader: leader, parts: map[*Partition]*fetchState{}, touched: map[*Partition]struct{}{}, wake: make(chan struct{}, 1), stop: make(chan struct{})}
		f.stopped, f.cancelStopped = context.WithCancel(context.Background())
		fs.fetchers[leader] = f
		fs.wg.Add(1)
		go f.run()
	}
	f.add(p)
}

// Unfollow stops fetching for p.
func (fs *Fetchers) Unfollow(p *Partition) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.fetchers {
		f.remove(p)
	}
}

// Close stops every fetcher and waits for them.
func (fs *Fetchers) Close() {
	fs.mu.Lock()
	fs.closed = true
	for id, f := range fs.fetchers {
		close(f.stop)
		f.cancelStopped()
		delete(fs.fetchers, id)
	}
	fs.mu.Unlock()
	fs.wg.Wait()
}

type fetchState struct {
	truncated bool // KIP-279 truncation done for the current leader epoch
	epoch     int32
	// The position cache (fetcher goroutine only): the partition's position as of its
	// positionVersion ver (0: never read), whether it is in the fetch, and whether
	// the next round must look at it again whatever its version says (it was
	// answered, left out by the throttle, or not read yet).
	ver     uint64
	pos     FollowerPosition
	in      bool
	recheck bool
	// delayedUntil is when a partition the leader answered with an error joins the
	// fetch again (zero: not delayed), unless its leader epoch moves from delayedEpoch
	// first (fetcher_backoff.go).
	delayedUntil time.Time
	delayedEpoch int32
	// errorStreak counts the leader's error answers for the partition since its last
	// answer without one (fetcher_backoff.go).
	errorStreak int
}

// fullCheckEvery bounds how long a round may go on trusting the position cache alone:
// each partition's position, throttle and truncation state are looked at again (under
// its lock) at least this often, should a change not have moved its version.
const fullCheckEvery = 10 * time.Second

// fetcher fetches from one leader.
type fetcher struct {
	fs     *Fetchers
	leader int32

	mu    sync.Mutex
	parts map[*Partition]*fetchState
	// touched holds the partitions added or removed since the fetcher goroutine last
	// looked (refresh), so that a change costs O(partitions changed), not a copy and a
	// look at every partition followed: a bulk creation adds partitions to a fetcher
	// of tens of thousands many times a second.
	touched map[*Partition]struct{}
	wake    chan struct{}
	stop    chan struct{}
	// stopped is cancelled with stop: each round's context derives from it, so that
	// no goroutine per round has to watch stop (its start and wake-up would sit on the
	// path of every fetch, which with acks=all is the path of every produce answer).
	stopped       context.Context
	cancelStopped context.CancelFunc

	client  *rpc.Client     // fetcher goroutine only
	session followerSession // fetcher goroutine only (fetch_session.go)
	// The fetcher goroutine's view of parts (as of the last refresh): order and
	// states side by side, at each partition's index in them, and its partitions by
	// topic and partition for the answers; gone are the partitions removed since the
	// last round, with whether each was in the fetch (the round forgets them); lastFull
	// is the last round that looked at every partition.
	order    []*Partition
	states   []*fetchState
	at       map[*Partition]int
	byName   map[string]map[int32]*Partition
	gone     []gonePartition
	lastFull time.Time
}

// gonePartition is a partition removed from a fetcher's view, for the next round to
// forget in the leader's session.
type gonePartition struct {
	p  *Partition
	in bool
}

func (f *fetcher) add(p *Partition) {
	f.mu.Lock()
	f.parts[p] = &fetchState{epoch: -2, recheck: true}
	f.touched[p] = struct{}{}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(p *Partition) {
	f.mu.Lock()
	if _, ok := f.parts[p]; ok {
		delete(f.parts, p)
		f.touched[p] = struct{}{}
	}
	f.mu.Unlock()
}

// refresh brings the fetcher goroutine's view of its partitions up to date with the
// partitions added and removed since it last looked, and reports whether it changed.
// It costs O(partitions changed): a partition added is looked at by the next round
// (its state's recheck), one removed is forgotten by it (gone), and a partition added
// again gets its new state in its place.
func (f *fetcher) refresh() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.touched) == 0 {
		return false
	}
	if f.at == nil {
		f.at = map[*Partition]int{}
		f.byName = map[string]map[int32]*Partition{}
	}
	for p := range f.touched {
		cur := f.parts[p]
		i, had := f.at[p]
		switch {
		case had && f.states[i] == cur:
		case had && cur != nil:
			// Added again (a new leader or epoch): the new state, still in the
			// leader's session if the old one was, so that the round forgets it
			// should it now be left out.
			cur.in = f.states[i].in
			f.states[i] = cur
		case had:
			f.gone = append(f.gone, gonePartition{p: p, in: f.states[i].in})
			f.removeAt(i)
		case cur != nil:
			f.at[p] = len(f.order)
			f.order = append(f.order, p)
			f.states = append(f.states, cur)
			if f.byName[p.Topic] == nil {
				f.byName[p.Topic] = map[int32]*Partition{}
			}
			f.byName[p.Topic][p.ID] = p
		}
	}
	clear(f.touched)
	return true
}

// removeAt takes the partition at index i out of the view (the last one takes its
// place).
func (f *fetcher) removeAt(i int) {
	p := f.order[i]
	last := len(f.order) - 1
	f.order[i], f.states[i] = f.order[last], f.states[last]
	f.at[f.order[i]] = i
	f.order[last], f.states[last] = nil, nil
	f.order, f.states = f.order[:last], f.states[:last]
	delete(f.at, p)
	if ps := f.byName[p.Topic]; ps[p.ID] == p {
		delete(ps, p.ID)
		if len(ps) == 0 {
			delete(f.byName, p.Topic)
		}
	}
}

// forgetGone adds to left the partitions removed since the last round (buildChanged
// keeps only those the leader's session holds), unless the same topic-partition is followed again (another
// replica object of it: its state then stands for the session's entry).
func (f *fetcher) forgetGone(left []kmsg.FetchRequestForgottenTopic) []kmsg.FetchRequestForgottenTopic {
	for _, g := range f.gone {
		if q := f.byName[g.p.Topic][g.p.ID]; q != nil {
			if g.in {
				f.states[f.at[q]].in = true
			}
			continue
		}
		left = appendForgotten(left, g.p.Topic, g.p.TopicID(), g.p.ID) // buildChanged skips one not in the session
	}
	clear(f.gone)
	f.gone = f.gone[:0]
	return left
}

func (f *fetcher) run() {
	defer f.fs.wg.Done()
	defer func() {
		if f.client != nil {
			f.client.Close()
		}
	}()
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			select {
			case <-f.stop:
				return
			case <-time.After(backoff):
			}
		} else {
			// The next fetch, which tells the leader this replica's new log end offset,
			// goes out at once: it completes the leader's acks=all produce requests.
			select {
			case <-f.stop:
				return
			default:
			}
		}
		f.refresh()
		if len(f.order) == 0 {
			select {
			case <-f.stop:
				return
			case <-f.wake:
			}
			continue
		}
		ctx, cancel := context.WithTimeout(f.stopped, f.fs.cfg.MaxWait+10*time.Second)
		err := f.round(ctx)
		cancel()
		if err != nil {
			if f.client != nil {
				f.client.Close()
				f.client = nil
			}
			f.fs.cfg.Logger.Debug("follower fetch failed", "leader", f.leader, "error", err)
			backoff = min(max(backoff*2, 50*time.Millisecond), time.Second)
			continue
		}
		backoff = 0
	}
}

// wanted decides, for one partition the round looks at, whether it is in the fetch
// and with which parameters: its position (read again under its lock only when its
// positionVersion moved), the follower throttle, and the KIP-279 truncation of a
// newly followed partition or leader epoch.
func (f *fetcher) wanted(ctx context.Context, p *Partition, st *fetchState) (kmsg.FetchRequestTopicPartition, bool, error) {
	st.recheck = false
	if v := p.positionVersion.Load(); v != st.ver || v == 0 {
		pos, ok := p.FollowerPosition()
		if !ok {
			pos.Leader = -1
		}
		st.ver, st.pos = v, pos
	}
	pos := st.pos
	if pos.Leader != f.leader {
		return kmsg.FetchRequestTopicPartition{}, false, nil
	}
	if st.delayed(pos, time.Now()) {
		st.recheck = true // time ends the delay
		return kmsg.FetchRequestTopicPartition{}, false, nil
	}
	if f.fs.cfg.Throttled != nil && f.fs.cfg.Throttled(p.Topic, p.ID) {
		st.recheck = true // time lifts the throttle
		return kmsg.FetchRequestTopicPartition{}, false, nil
	}
	if !st.truncated || st.epoch != pos.LeaderEpoch {
		if err := f.truncate(ctx, p, pos); err != nil {
			st.recheck = true
			return kmsg.FetchRequestTopicPartition{}, false, err
		}
		st.truncated, st.epoch = true, pos.LeaderEpoch
		st.ver = p.positionVersion.Load()
		var ok bool
		if pos, ok = p.FollowerPosition(); !ok {
			st.pos.Leader = -1
			return kmsg.FetchRequestTopicPartition{}, false, nil
		}
		st.pos = pos
	}
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.CurrentLeaderEpoch = p.ID, pos.LogEndOffset, pos.LeaderEpoch
	fp.LastFetchedEpoch, fp.PartitionMaxBytes, fp.LogStartOffset = pos.LastFetchedEpoch, f.fs.cfg.MaxBytes, pos.LogStartOffset
	return fp, true, nil
}

// round truncates newly followed partitions, then fetches once for all of them. A
// round of an incremental session looks only at the partitions whose position moved
// (positionVersion), that the last answer named, that the throttle left out or that
// joined since the last round, and forgets those that left; a full fetch and every
// fullCheckEvery look at all of them.
func (f *fetcher) round(ctx context.Context) error {
	if f.client == nil {
		cl, err := f.fs.cfg.Connect(ctx, f.leader)
		if err != nil {
			return err
		}
		f.client = cl
		f.session.reset() // a new connection starts with a full fetch
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = f.fs.fetchVersion()
	req.ReplicaID = f.fs.cfg.BrokerID
	req.MaxWaitMillis = int32(f.fs.cfg.MaxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = f.fs.cfg.ResponseMaxBytes // Kafka's: the leader still answers a first batch larger than it
	now := time.Now()
	all := f.session.epoch == 0 || now.Sub(f.lastFull) >= fullCheckEvery
	topicAt := map[string]int{} // index in want
	var want []kmsg.FetchRequestTopic
	var left []kmsg.FetchRequestForgottenTopic
	if all {
		clear(f.gone) // build forgets what it does not send again
		f.gone = f.gone[:0]
	} else {
		left = f.forgetGone(left)
	}
	active := 0
	for i, p := range f.order {
		st := f.states[i]
		if !all && !st.recheck && p.positionVersion.Load() == st.ver {
			if st.in {
				active++
			}
			continue // unchanged since the last round: as sent
		}
		fp, in, err := f.wanted(ctx, p, st)
		if err != nil {
			return err
		}
		if !in {
			if st.in && !all {
				left = appendForgotten(left, p.Topic, p.TopicID(), p.ID)
			}
			st.in = false
			continue
		}
		st.in = true
		active++
		at, ok := topicAt[p.Topic]
		if !ok {
			at = len(want)
			topicAt[p.Topic] = at
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.Topic, p.TopicID() // the id is sent from v13
			want = append(want, t)
		}
		want[at].Partitions = append(want[at].Partitions, fp)
	}
	if all {
		f.lastFull = now
	}
	if active == 0 {
		if len(left) > 0 {
			// Partitions left this incremental session but none is fetched: the next
			// fetch, full, names only those wanted then (the leader would otherwise
			// keep answering the ones that left, at once if they are in error).
			f.session.reset()
		}
		select {
		case <-f.wake:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
		return nil
	}
	if all {
		f.session.build(req, want)
	} else {
		f.session.buildChanged(req, want, left)
	}
	f.fs.stampReplicaState(req)
	resp, frame, err := f.client.DoPooled(ctx, req)
	if err != nil {
		f.session.reset()
		return err
	}
	// The appends below copy the batches into the log (write(2)); nothing keeps
	// RecordBatches, so the response frame is reused once the round is done.
	defer frame.Release()
	fr := resp.(*kmsg.FetchResponse)
	f.session.nameTopics(fr)
	if !f.session.answered(fr) {
		switch fr.ErrorCode {
		case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code, kerr.FetchSessionTopicIDError.Code:
			f.fs.cfg.Logger.Debug("follower fetch session reset", "leader", f.leader, "error", kerr.ErrorForCode(fr.ErrorCode))
			return nil // the next round is a full fetch, at once
		}
		return kerr.ErrorForCode(fr.ErrorCode)
	}
	// Append every partition's batches first, then finish them all at once: their
	// fsyncs run together (one fsync round per fetch answer, not one per partition),
	// and the next fetch, which tells the leader the new log end offsets, waits for all
	// of them.
	var firstErr error
	note := func(err error) {
		if err != nil && firstErr == nil && !errors.Is(err, ErrNotLeader) {
			firstErr = err
		}
	}
	var finishes []followerFinish
	for _, t := range fr.Topics {
		for _, rp := range t.Partitions {
			p := f.byName[t.Topic][rp.Partition]
			if p == nil {
				continue
			}
			f.mu.Lock()
			st := f.parts[p]
			f.mu.Unlock()
			if st == nil || !st.in {
				continue
			}
			st.recheck = true // answered: its position, or its truncation state, may move
			if f.fs.cfg.Fetched != nil {
				f.fs.cfg.Fetched(p.Topic, p.ID, len(rp.RecordBatches))
			}
			fin, err := f.apply(ctx, p, st, rp)
			note(err)
			if fin.p != nil {
				finishes = append(finishes, fin)
			}
		}
	}
	for _, err := range finishFollowerAppends(finishes) {
		note(err)
	}
	return firstErr
}

// appendForgotten adds topic-partition, of the topic with id topicID (sent from v13),
// to a list of forgotten topics.
func appendForgotten(left []kmsg.FetchRequestForgottenTopic, topic string, topicID [16]byte, partition int32) []kmsg.FetchRequestForgottenTopic {
	for i := range left {
		if left[i].Topic == topic && left[i].TopicID == topicID {
			left[i].Partitions = append(left[i].Partitions, partition)
			return left
		}
	}
	ft := kmsg.NewFetchRequestForgottenTopic()
	ft.Topic, ft.TopicID, ft.Partitions = topic, topicID, []int32{partition}
	return append(left, ft)
}

// followerFinish is a follower append waiting for its fsync and high watermark.
type followerFinish struct {
	p                        *Partition
	end                      int64 // log end offset after the append; 0 when nothing was appended
	leaderEpoch              int32
	leaderHW, leaderLogStart int64
}

// maxParallelFollowerSyncs bounds the goroutines one fetch answer's fsyncs use.
const maxParallelFollowerSyncs = 16

// finishFollowerAppends finishes every append of one fetch answer. The fsyncs run in
// parallel, so that the round costs about one fsync whatever the partition count; it
// returns when all are done, with one error per finish (nil when it succeeded).
func finishFollowerAppends(fins []followerFinish) []error {
	errs := make([]error, len(fins))
	syncs := 0
	for _, fin := range fins {
		if fin.end > 0 && fin.p.syncEveryAppend.Load() {
			syncs++
		}
	}
	if syncs <= 1 {
		for i, fin := range fins {
			errs[i] = fin.p.finishFollowerAppend(fin.end, fin.leaderEpoch, fin.leaderHW, fin.leaderLogStart)
		}
		return errs
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelFollowerSyncs)
	for i, fin := range fins {
		if fin.end == 0 || !fin.p.syncEveryAppend.Load() {
			errs[i] = fin.p.finishFollowerAppend(fin.end, fin.leaderEpoch, fin.leaderHW, fin.leaderLogStart)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			errs[i] = fin.p.finishFollowerAppend(fin.end, fin.leaderEpoch, fin.leaderHW, fin.leaderLogStart)
			<-sem
		}()
	}
	wg.Wait()
	return errs
}

// apply handles one partition's fetch answer. Records are appended at once; the
// returned finish (zero when there is none) completes the append: the fsync and the
// leader's high watermark.
func (f *fetcher) apply(ctx context.Context, p *Partition, st *fetchState, rp kmsg.FetchResponseTopicPartition) (followerFinish, error) {
	pos, ok := p.FollowerPosition()
	if !ok {
		return followerFinish{}, nil
	}
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
		st.errorStreak = 0
	case errors.Is(err, kerr.OffsetOutOfRange):
		if pos.LogEndOffset < rp.LogStartOffset || rp.LogStartOffset < 0 {
			return followerFinish{}, p.TruncateFullyAndStartAt(max(rp.LogStartOffset, 0))
		}
		st.truncated = false // find the divergence again
		return followerFinish{}, nil
	case errors.Is(err, kerr.OffsetMovedToTieredStorage):
		// KIP-405: the leader's local log starts past this replica's log end; build the
		// state below it from remote storage and fetch from there (fetcher_tiered.go).
		if err := f.buildFromRemote(ctx, p, pos, rp.LogStartOffset); err != nil {
			backoff := st.backoff(err, f.fs.cfg.Backoff)
			st.delay(time.Now(), backoff, pos.LeaderEpoch)
			f.fs.cfg.Logger.Debug("cannot build the replica's state from remote storage yet; backing off", "topic", p.Topic,
				"partition", p.ID, "leader", f.leader, "error", err, "backoff", backoff)
		}
		return followerFinish{}, nil
	default:
		// Fenced, unknown epoch, not leader, unknown partition: metadata will tell us
		// what changed; until then, or until the backoff ends, the partition is left
		// out of the fetch.
		backoff := st.backoff(err, f.fs.cfg.Backoff)
		st.delay(time.Now(), backoff, pos.LeaderEpoch)
		f.fs.cfg.Logger.Debug("follower fetch of a partition failed; backing off", "topic", p.Topic, "partition", p.ID,
			"leader", f.leader, "error", err, "backoff", backoff)
		return followerFinish{}, nil
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		st.truncated = false
		_, err := p.truncateByLeaderEpoch(rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset)
		return followerFinish{}, err
	}
	end, err := p.appendAsFollowerUnsynced(rp.RecordBatches, pos.LeaderEpoch)
	if err != nil {
		return followerFinish{}, err
	}
	return followerFinish{p: p, end: end, leaderEpoch: pos.LeaderEpoch, leaderHW: rp.HighWatermark, leaderLogStart: rp.LogStartOffset}, nil
}

// truncate runs KIP-279: ask the leader where our latest epoch ends, truncate, and
// repeat with an earlier epoch until the logs agree.
func (f *fetcher) truncate(ctx context.Context, p *Partition, pos FollowerPosition) error {
	epoch := pos.LastFetchedEpoch
	for epoch >= 0 {
		leaderEpoch, end, err := f.offsetForLeaderEpoch(ctx, p, pos.LeaderEpoch, epoch)
		if err != nil {
			return err
		}
		if epoch, err = p.truncateByLeaderEpoch(leaderEpoch, end); err != nil {
			return err
		}
	}
	return nil
}

// offsetForLeaderEpoch asks the leader (OffsetForLeaderEpoch, key 23) for the largest
// epoch at most epoch and where it ends, with currentLeaderEpoch for fencing.
func (f *fetcher) offsetForLeaderEpoch(ctx context.Context, p *Partition, currentLeaderEpoch, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 3
	req.ReplicaID = f.fs.cfg.BrokerID
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = p.Topic
	tp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	tp.Partition, tp.CurrentLeaderEpoch, tp.LeaderEpoch = p.ID, currentLeaderEpoch, epoch
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	resp, err := f.client.Do(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return 0, 0, errors.New("replication: malformed OffsetForLeaderEpoch response")
	}
	rp := r.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return 0, 0, err
	}
	return rp.LeaderEpoch, rp.EndOffset, nil
}
