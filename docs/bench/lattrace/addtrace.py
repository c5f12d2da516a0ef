# Inserts the one-record-in-flight trace points (docs/bench/one-in-flight-trace.sh) into a
# copy of the source tree given as the first argument. Never run it on a worktree: the
# trace points are a measuring device, not part of Petrel.
import sys
root=sys.argv[1]
def sub(p, olds, new_fn):
    p=root+'/'+p
    s=open(p).read()
    for old in olds:
        if old in s:
            s=s.replace(old,new_fn(old),1); open(p,'w').write(s); return
    raise SystemExit(f"anchor not found in {p}: {olds[0]!r}")
P='replication/partition.go'
sub(P, ['''	if err == nil {
		open := len(p.producers.open)
		p.afterAppendLocked(records)''', '''	if err == nil {
		p.afterAppendLocked(records, activeBefore, info)''', '''	if err == nil {
		p.afterAppendLocked(records)
		// Followers may fetch'''], lambda o: o.replace('''	if err == nil {
''', '''	if err == nil {
		Trace(p.opts.BrokerID, "L.appended")
''', 1))
sub(P, ['''		syncStart := time.Now()
'''], lambda o: o+'''		Trace(p.opts.BrokerID, "fsync.start")
''')
sub(P, ['''		if p.opts.ObserveFsync != nil {
			p.opts.ObserveFsync(time.Since(syncStart))'''], lambda o: '''		Trace(p.opts.BrokerID, "fsync.end")
'''+o)
sub('replication/leader.go', ['''	if advanced || logStartMoved {'''], lambda o: '''	if advanced {
		Trace(p.opts.BrokerID, "L.hw-by-fetch")
	}
'''+o)
P='replication/fetcher.go'
sub(P, ['''	resp, frame, err := f.client.DoPooled(ctx, req)
	if err != nil {
		f.session.reset()
		return err
	}
''', '''	resp, frame, err := f.client.DoPooled(ctx, req)
	if err != nil {
		return err
	}
''', '''	resp, err := f.client.Do(ctx, req)
	if err != nil {
		return err
	}
'''], lambda o: '''	Trace(f.fs.cfg.BrokerID, "F.fetch-sent")
'''+o+'''	Trace(f.fs.cfg.BrokerID, "F.fetch-answered")
''')
sub(P, ['''	for _, err := range finishFollowerAppends(finishes) {'''], lambda o: '''	Trace(f.fs.cfg.BrokerID, "F.appended")
'''+o)
P='broker/01_fetch.go'
import os
watched = os.path.exists(root+'/replication/fetch_session_watch.go')
if watched:
    # A follower's fetch session is watched: served and parked in replication/.
    W='replication/fetch_session_watch.go'
    sub(W, ['''	sw := fc.session.watch
	now := time.Now()'''], lambda o: '''	Trace(-1, "L.fetch-recv")
'''+o)
    sub(W, ['''func (sf *watchedFetch) try(expired bool) bool {
'''], lambda o: o+'''	Trace(-1, "L.park-woken")
''')
    sub(W, ['''func (sf *watchedFetch) complete() {
'''], lambda o: o+'''	Trace(-1, "L.park-answer")
''')
elif os.path.exists(root+'/broker/delayed_fetch.go'):
    # Parked follower fetches without a goroutine (read on the appending goroutine).
    sub('broker/delayed_fetch.go', ['''		resp, bytes, errored := f.readFetch()
		if errored || bytes >= max(int(f.r.MinBytes), 1) || expired {'''], lambda o: '''		replication.Trace(-1, "L.park-woken")
'''+o+'''
			replication.Trace(-1, "L.park-answer")''')
else:
    sub(P, ['''		resp, bytes, errored := b.readFetch(r)
		if errored || bytes >= int(r.MinBytes) {
			return resp'''], lambda o: '''		replication.Trace(b.cfg.NodeID, "L.park-woken")
		resp, bytes, errored := b.readFetch(r)
		if errored || bytes >= int(r.MinBytes) {
			replication.Trace(b.cfg.NodeID, "L.park-answer")
			return resp''')
if not watched: # the fetch is received in broker/ (older trees)
    sub(P, ['''	resp, bytes, errored := b.readFetch(r)
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond''', '''	resp, bytes, errored := b.readFetch(plan, denied)
	wait := time.Duration(r.MaxWaitMillis) * time.Millisecond'''], lambda o: '''	replication.Trace(b.cfg.NodeID, "L.fetch-recv")
'''+o)
P='broker/00_produce.go'
sub(P, ['''	r := req.Body.(*kmsg.ProduceRequest)
	resolveProduceTopicIDs(b.Image(), r) // v13''', '''	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)'''], lambda o: o.replace('''	r := req.Body.(*kmsg.ProduceRequest)
''', '''	r := req.Body.(*kmsg.ProduceRequest)
	replication.Trace(b.cfg.NodeID, "L.produce-recv")
''', 1))
# The acks=all answer: the outcome callback of awaitAcks (broker/00_produce.go), run by
# the goroutine that advanced the high watermark; older trees answered in
# broker/delayed_produce.go.
if os.path.exists(root+'/broker/delayed_produce.go'):
    sub('broker/delayed_produce.go', ['''	d.ch <- d.resp
	if len(d.pending) > 1 {''', '''	d.out.Complete(d.resp)
	if len(d.pending) > 1 {'''], lambda o: '''	replication.Trace(-1, "L.produce-done")
'''+o)
else:
    sub(P, ['''			*pending[i].code, _ = acksAllCode(o)
		}
		done()'''], lambda o: o.replace('''		done()''', '''		replication.Trace(-1, "L.produce-done")
		done()'''))
