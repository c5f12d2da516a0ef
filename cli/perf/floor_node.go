package perf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// perfFloorNodeCommand is one process of `petrel perf floor`, which starts it: the
// leader (--followers N) or a follower (--leader ADDR). It prints "listening ADDR" (a
// follower: its leader's) once ready, and ends when its standard input closes or its
// connection does. A leader with --kafka takes its records from a Kafka producer (`perf
// produce-ceiling --floor`) and prints "listening ADDR KAFKA-ADDR".
func perfFloorNodeCommand() *ucli.Command {
	return &ucli.Command{
		Name:   "floor-node",
		Usage:  "one process of `petrel perf floor` (started by it)",
		Hidden: true,
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "followers", Usage: "run the leader, for this many followers"},
			&ucli.StringFlag{Name: "leader", Usage: "run a follower of the leader at this address"},
			&ucli.StringFlag{Name: "fsync-dir", Usage: "fsync each record appended to a file in this directory"},
			&ucli.BoolFlag{Name: "kafka", Usage: "a leader: take the records from a Kafka producer, on a listener of its own, and answer it in Kafka"},
		},
		Action: runFloorNode,
	}
}

func runFloorNode(c *ucli.Context) error {
	ignoreStopSignals() // the parent ends the node, and cleans up, by closing its input
	var log *floorLog
	if dir := c.String("fsync-dir"); dir != "" {
		f, err := os.CreateTemp(dir, "node-")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		log = &floorLog{f: f}
	}
	var closers closerSet
	go func() { // the parent closes standard input to end the run
		_, _ = io.Copy(io.Discard, os.Stdin)
		closers.closeAll()
	}()
	if addr := c.String("leader"); addr != "" {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		closers.add(conn)
		fmt.Fprintf(c.App.Writer, "listening %s\n", addr)
		return quietEOF(floorFollower(conn, log))
	}
	n := c.Int("followers")
	if n < 0 {
		return fmt.Errorf("bad --followers %d", n)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	closers.add(ln)
	l := &floorLeader{log: log, want: n, ready: make(chan struct{}), record: make([]byte, 0, 4096)}
	if c.Bool("kafka") {
		// The canned broker answers the producer's requests other than Produce (and
		// advertises its listener); the leader serves that listener itself.
		if l.kafka, err = newCannedBroker(ceilingTopic, 1, 0, 1, 1<<20, nil); err != nil {
			return err
		}
		closers.add(l.kafka.ln)
		fmt.Fprintf(c.App.Writer, "listening %s %s\n", ln.Addr(), l.kafka.addr())
	} else {
		fmt.Fprintf(c.App.Writer, "listening %s\n", ln.Addr())
	}
	if n == 0 {
		close(l.ready)
	}
	return quietEOF(l.serve(ln, &closers))
}

// floorLog is a node's file: each record appended and fsynced.
type floorLog struct {
	f   *os.File
	end int64
}

func (l *floorLog) appendSync(b []byte) error {
	if _, err := l.f.WriteAt(b, l.end); err != nil {
		return err
	}
	l.end += int64(len(b))
	return l.f.Sync()
}

// floorFollower fetches from the leader on conn: it asks for the next offset, waits
// for the record (the leader parks the fetch until it has one), fsyncs it when log is
// set, and asks for the next.
func floorFollower(conn net.Conn, log *floorLog) error {
	if _, err := conn.Write([]byte{floorRoleFollower}); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	var buf []byte
	for offset := int64(0); ; offset++ {
		if _, err := conn.Write(floorOffsetFrame(offset)); err != nil {
			return err
		}
		record, err := readFloorFrame(r, &buf)
		if err != nil {
			return err
		}
		if len(record) < floorMinRecordSize || int64(binary.BigEndian.Uint64(record)) != offset {
			return fmt.Errorf("fetched offset %d, got another record", offset)
		}
		if log != nil {
			if err := log.appendSync(record); err != nil {
				return err
			}
		}
	}
}

// floorLeader is the floor's leader: it appends the client's records, answers the
// followers' fetches and answers the client once every follower has fetched past the
// record (and the leader's own fsync is done). Whichever goroutine completes a
// record's commit writes the client's answer, so no goroutine wakes another.
type floorLeader struct {
	log   *floorLog
	want  int           // followers to wait for
	ready chan struct{} // closed once want followers are connected
	kafka *cannedBroker // with --kafka: the producer's listener and the answers to its other requests

	mu        sync.Mutex
	client    net.Conn
	answerTo  []byte // with --kafka: the Produce response frame for the record in flight
	followers []*floorFetcher
	end       int64  // records appended
	durable   int64  // records fsynced by the leader (end without a log)
	answered  int64  // records answered to the client
	record    []byte // the latest record's frame, for a fetch that comes after it
}

// floorFetcher is one follower's connection on the leader.
type floorFetcher struct {
	conn   net.Conn
	acked  int64 // the offset of its latest fetch: it has every record before it
	parked bool  // its latest fetch waits for a record
}

func (l *floorLeader) serve(ln net.Listener, closers *closerSet) error {
	errs := make(chan error, l.want+2) // a goroutine per connection, or the Kafka acceptor and one of its connections
	conns := l.want + 1
	if l.kafka != nil {
		conns = l.want // the producer connects to the Kafka listener
		go func() { errs <- l.acceptKafka(closers, errs) }()
	}
	for range conns {
		conn, err := ln.Accept()
		if err != nil {
			return err
		}
		closers.add(conn)
		var role [1]byte
		if _, err := io.ReadFull(conn, role[:]); err != nil {
			return err
		}
		switch role[0] {
		case floorRoleFollower:
			f := &floorFetcher{conn: conn}
			l.mu.Lock()
			l.followers = append(l.followers, f)
			if len(l.followers) == l.want {
				close(l.ready)
			}
			l.mu.Unlock()
			go func() { errs <- l.serveFollower(f) }()
		case floorRoleClient:
			go func() { errs <- l.serveClient(conn) }()
		default:
			return fmt.Errorf("unknown role %q", role[0])
		}
	}
	err := <-errs // the first connection to end ends the run
	closers.closeAll()
	return err
}

// serveClient appends each record the client sends, hands it to the parked fetches,
// fsyncs it, and answers when it is committed.
func (l *floorLeader) serveClient(conn net.Conn) error {
	<-l.ready
	r := bufio.NewReader(conn)
	var buf []byte
	for {
		body, err := readFloorFrame(r, &buf)
		if err != nil {
			return err
		}
		if len(body) < floorMinRecordSize {
			return errors.New("short record")
		}
		if err := l.publish(conn, nil, body); err != nil {
			return err
		}
	}
}

// acceptKafka serves every connection of the Kafka producer (kgo opens several) until
// the listener closes; a connection the producer closes ends only itself. A broken
// exchange ends the run: its error goes to errs before anything is closed, so that it,
// not a connection closed after it, is what the run ends with.
func (l *floorLeader) acceptKafka(closers *closerSet, errs chan<- error) error {
	for {
		conn, err := l.kafka.ln.Accept()
		if err != nil {
			return err
		}
		closers.add(conn)
		go func() {
			if err := quietEOF(l.serveKafka(conn)); err != nil {
				select {
				case errs <- err:
				default:
				}
				closers.closeAll()
			}
		}()
	}
}

// serveKafka answers one producer connection's requests in order: a Produce of one
// record batch is a record of the floor, answered once committed; the canned broker
// answers the rest at once.
func (l *floorLeader) serveKafka(conn net.Conn) error {
	<-l.ready
	r := bufio.NewReader(conn)
	var in, out, body []byte
	for {
		req, correlation, err := readCannedRequest(r, &in)
		if err != nil {
			return err
		}
		out = binary.BigEndian.AppendUint32(out[:0], 0) // frame size, set by appendCannedAnswer
		out = binary.BigEndian.AppendUint32(out, correlation)
		if _, ok := req.(*kmsg.FetchRequest); ok {
			return errors.New("floor leader: no Fetch from the producer")
		}
		produce, isProduce := req.(*kmsg.ProduceRequest)
		var batch []byte
		if isProduce {
			if produce.Acks == 0 || len(produce.Topics) != 1 || len(produce.Topics[0].Partitions) != 1 {
				return errors.New("floor leader: a Produce must have acks and carry one partition")
			}
			batch = produce.Topics[0].Partitions[0].Records
		}
		resp, err := l.kafka.answer(req)
		if err != nil {
			return err
		}
		out = appendCannedAnswer(out, req.Key(), resp)
		if !isProduce {
			l.mu.Lock()
			pending := l.answered != l.end && l.client == conn
			l.mu.Unlock()
			if pending { // its answer would overtake the Produce's
				return fmt.Errorf("floor leader: %s sent behind an unanswered Produce", kmsg.NameForKey(req.Key()))
			}
			if _, err := conn.Write(out); err != nil {
				return err
			}
			continue
		}
		// The floor's record: its offset (the records before it, which the followers
		// check), then the batch.
		l.mu.Lock()
		next := l.end
		l.mu.Unlock()
		body = binary.BigEndian.AppendUint64(body[:0], uint64(next))
		body = append(body, batch...)
		// The answer is written by whichever goroutine commits the record, after this
		// one may have read the next request into out: a copy of its own.
		if err := l.publish(conn, bytes.Clone(out), body); err != nil {
			return err
		}
	}
}

// publish appends body, the next record, hands it to the parked fetches, fsyncs it,
// and answers conn when it is committed: with answer (a Kafka response frame), or
// with the record's offset when answer is nil.
func (l *floorLeader) publish(conn net.Conn, answer, body []byte) error {
	l.mu.Lock()
	if l.answered != l.end {
		l.mu.Unlock()
		return errors.New("a second record in flight")
	}
	l.client, l.answerTo = conn, answer
	l.end++
	l.record = binary.BigEndian.AppendUint32(l.record[:0], uint32(len(body)))
	l.record = append(l.record, body...)
	record := l.record
	var wake []*floorFetcher
	for _, f := range l.followers {
		if f.parked {
			f.parked = false
			wake = append(wake, f)
		}
	}
	if l.log == nil {
		l.durable = l.end
	}
	committed := l.commitLocked()
	l.mu.Unlock()
	for _, f := range wake {
		if _, err := f.conn.Write(record); err != nil {
			return err
		}
	}
	if l.log != nil {
		if err := l.log.appendSync(body); err != nil {
			return err
		}
		l.mu.Lock()
		l.durable = l.end
		committed = l.commitLocked()
		l.mu.Unlock()
	}
	return l.answer(committed)
}

// serveFollower reads one follower's fetches: each says what it has, and is answered
// at once when the record is there, or parked until it is.
func (l *floorLeader) serveFollower(f *floorFetcher) error {
	r := bufio.NewReader(f.conn)
	var buf []byte
	for {
		body, err := readFloorFrame(r, &buf)
		if err != nil {
			return err
		}
		if len(body) != 8 {
			return errors.New("bad fetch")
		}
		offset := int64(binary.BigEndian.Uint64(body))
		l.mu.Lock()
		if offset < f.acked || offset > l.end || offset < l.end-1 {
			l.mu.Unlock()
			return fmt.Errorf("fetch at offset %d with %d records", offset, l.end)
		}
		f.acked = offset
		answer := l.commitLocked()
		var send []byte
		if offset < l.end {
			send = l.record
		} else {
			f.parked = true
		}
		l.mu.Unlock()
		if err := l.answer(answer); err != nil {
			return err
		}
		if send != nil {
			if _, err := f.conn.Write(send); err != nil {
				return err
			}
		}
	}
}

// commitLocked reports whether the latest record just became committed (fsynced by
// the leader and fetched past by every follower) and unanswered; the caller then
// answers it, outside the lock.
func (l *floorLeader) commitLocked() int64 {
	if l.answered == l.end || l.durable < l.end {
		return -1
	}
	for _, f := range l.followers {
		if f.acked < l.end {
			return -1
		}
	}
	l.answered = l.end
	return l.end - 1
}

// answer tells the client that the record at offset is committed, in Kafka when it
// sent a Produce (nothing when offset is negative).
func (l *floorLeader) answer(offset int64) error {
	if offset < 0 {
		return nil
	}
	l.mu.Lock()
	conn, frame := l.client, l.answerTo
	l.mu.Unlock()
	if frame == nil {
		frame = floorOffsetFrame(offset)
	}
	_, err := conn.Write(frame)
	return err
}

// closerSet closes everything added to it, once closeAll runs (at once for what is
// added after).
type closerSet struct {
	mu     sync.Mutex
	closed bool
	items  []io.Closer
}

func (s *closerSet) add(c io.Closer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return
	}
	s.items = append(s.items, c)
}

func (s *closerSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.items {
		c.Close()
	}
	s.items = nil
}

// ignoreStopSignals keeps a node process of `perf floor` or of a canned cluster alive
// when the terminal's Ctrl-C (or a SIGTERM to the whole process group) reaches it: its
// parent stops it by closing its standard input, after which it removes its files.
func ignoreStopSignals() { signal.Ignore(os.Interrupt, syscall.SIGTERM) }

// quietEOF turns the end of a run (a connection closed) into success.
func quietEOF(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}
