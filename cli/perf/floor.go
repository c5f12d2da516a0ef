package perf

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	ucli "github.com/urfave/cli/v2"
)

// FloorNodeEnv marks a process started by `petrel perf floor` or `perf produce-ceiling
// --replicas` as one of its nodes; a test binary that runs either reads it in TestMain
// to run the node instead of the tests.
const FloorNodeEnv = "PETREL_PERF_FLOOR_NODE"

// floorMinRecordSize is the smallest record: its first 8 bytes carry its offset.
const floorMinRecordSize = 8

// perfFloorCommand is `petrel perf floor`: the latency floor of one acks=all record in
// flight with replication factor N, measured with the broker's message pattern and
// none of its work. The command starts a leader and N-1 follower processes (this same
// binary) on 127.0.0.1 and is the client itself:
//
//	client → leader → every follower's parked fetch answered → each follower's next
//	fetch → leader → client
//
// four one-way hops between processes, as acks=all needs. With --fsync the leader
// fsyncs a record-size append to a file before it answers (after it has answered the
// parked fetches, as the broker does) and each follower fsyncs one before its next
// fetch, where the broker fsyncs.
func perfFloorCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "floor",
		Usage: "measure the latency floor of acks=all with one record in flight: the broker's message pattern between processes, without a broker",
		Flags: []ucli.Flag{
			&ucli.IntFlag{Name: "records", Usage: "how many records to send (0: until --duration)"},
			&ucli.DurationFlag{Name: "duration", Usage: "stop after this long (0: no limit)"},
			&ucli.IntFlag{Name: "record-size", Usage: "bytes per record", Value: 1024},
			&ucli.IntFlag{Name: "replicas", Usage: "processes holding the record: the leader and replicas-1 followers", Value: 3},
			&ucli.BoolFlag{Name: "fsync", Usage: "fsync a record-size append where the broker fsyncs: on the leader before it answers, on each follower before its next fetch"},
			&ucli.StringFlag{Name: "dir", Usage: "directory for the fsynced files (--fsync); put it on the brokers' disk", Value: os.TempDir()},
			&ucli.BoolFlag{Name: "json", Usage: "print the final figures as JSON"},
		},
		Action: runPerfFloor,
	}
}

// floorArgs are `petrel perf floor`'s checked arguments.
type floorArgs struct {
	bounds     perfBounds
	recordSize int
	replicas   int
	fsync      bool
	dir        string
}

func parseFloorArgs(c *ucli.Context) (floorArgs, error) {
	bounds, err := parsePerfBounds(c)
	if err != nil {
		return floorArgs{}, err
	}
	a := floorArgs{bounds: bounds, recordSize: c.Int("record-size"), replicas: c.Int("replicas"), fsync: c.Bool("fsync"), dir: c.String("dir")}
	switch {
	case a.recordSize < floorMinRecordSize || a.recordSize > floorMaxFrame:
		return a, fmt.Errorf("bad --record-size %d (%d to %d)", a.recordSize, floorMinRecordSize, floorMaxFrame)
	case a.replicas < 1 || a.replicas > 16:
		return a, fmt.Errorf("bad --replicas %d (1 to 16)", a.replicas)
	}
	return a, nil
}

func runPerfFloor(c *ucli.Context) error {
	a, err := parseFloorArgs(c)
	if err != nil {
		return err
	}
	errOut := clientcmd.LockErrWriter(c)
	ctx, stop := clientcmd.SignalContext(c.Context)
	defer stop()
	dir := ""
	if a.fsync {
		if dir, err = os.MkdirTemp(a.dir, "petrel-floor-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	nodes := &floorNodes{errOut: errOut}
	defer nodes.stop()
	addr, err := nodes.start(ctx, dir, "--followers", strconv.Itoa(a.replicas-1))
	if err != nil {
		return err
	}
	for range a.replicas - 1 {
		if _, err := nodes.start(ctx, dir, "--leader", addr); err != nil {
			return err
		}
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	context.AfterFunc(ctx, func() { conn.Close() }) // an interrupt ends the run
	stats := newPerfStats(true)
	stopProgress := startProgress(errOut, progressInterval, func() string { return stats.progressLine("sent") })
	switchesBefore := nodes.contextSwitches()
	runErr := floorClient(conn, a, stats)
	switchesAfter := nodes.contextSwitches()
	stats.finish()
	stopProgress()
	if ctx.Err() != nil {
		runErr = nil
	}
	sum := floorSummary{perfSummary: stats.summary()}
	if switchesBefore != nil && switchesAfter != nil && sum.Records > 0 {
		for i := range switchesAfter {
			sum.SwitchesPerRecord = append(sum.SwitchesPerRecord, float64(switchesAfter[i]-switchesBefore[i])/float64(sum.Records))
		}
	}
	if err := sum.write(c.App.Writer, c.Bool("json")); err != nil {
		return err
	}
	return runErr
}

// floorSummary is perfSummary with the nodes' context switches per record (the
// leader's first), where the system tells them.
type floorSummary struct {
	perfSummary
	SwitchesPerRecord []float64 `json:"node_context_switches_per_record,omitempty"`
}

func (s floorSummary) write(w io.Writer, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(s)
	}
	if err := writeSummary(w, s.perfSummary, false); err != nil {
		return err
	}
	if len(s.SwitchesPerRecord) == 0 {
		return nil
	}
	total, each := 0.0, make([]string, len(s.SwitchesPerRecord))
	for i, n := range s.SwitchesPerRecord {
		total += n
		each[i] = fmt.Sprintf("%.2f", n)
	}
	_, err := fmt.Fprintf(w, "voluntary context switches per record: %.2f (leader, then followers: %s)\n", total, strings.Join(each, ", "))
	return err
}

// floorClient sends records one at a time on conn, each after the previous answer, and
// records each round trip.
func floorClient(conn net.Conn, a floorArgs, stats *perfStats) error {
	if _, err := conn.Write([]byte{floorRoleClient}); err != nil {
		return err
	}
	req := make([]byte, 4+a.recordSize)
	binary.BigEndian.PutUint32(req, uint32(a.recordSize))
	copy(req[12:], randomPayload(a.recordSize-floorMinRecordSize))
	r := bufio.NewReader(conn)
	var answer []byte
	for i := int64(0); !a.bounds.done(i, time.Since(stats.start)); i++ {
		binary.BigEndian.PutUint64(req[4:], uint64(i))
		sentAt := time.Now()
		if _, err := conn.Write(req); err != nil {
			return err
		}
		body, err := readFloorFrame(r, &answer)
		if err != nil {
			return fmt.Errorf("reading the answer to record %d: %w", i, err)
		}
		if len(body) != 8 || binary.BigEndian.Uint64(body) != uint64(i) {
			return fmt.Errorf("record %d: unexpected answer %x", i, body)
		}
		stats.recordAck(time.Since(sentAt), a.recordSize, nil)
	}
	return nil
}

// floorNodes are the node processes of one floor run, or of a canned cluster (`perf
// produce-ceiling --replicas`).
type floorNodes struct {
	errOut  io.Writer
	command string // the hidden perf command each runs: floor-node unless set
	procs   []*exec.Cmd
	stdins  []io.WriteCloser
	outs    []*nodeOutput // each node's standard output after its first line
}

// nodeOutput is a node's standard output after its first line, read by one goroutine;
// lines is read only once done is closed (stop waits for it).
type nodeOutput struct {
	lines []string
	done  chan struct{} // closed once the reader has read to the end
}

// start runs one node (`petrel perf floor-node` with args) and returns the address it
// listens on. A node ends when its standard input closes, which stop does (and the
// kernel does, should this process die).
func (n *floorNodes) start(ctx context.Context, dir string, args ...string) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if dir != "" {
		args = append(args, "--fsync-dir", dir)
	}
	command := cmp.Or(n.command, "floor-node")
	cmd := exec.Command(exe, append([]string{"petrel", "perf", command}, args...)...)
	cmd.Args = cmd.Args[1:] // argv[0] is the program name
	cmd.Env = append(os.Environ(), FloorNodeEnv+"=1")
	cmd.Stderr = n.errOut
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	out := &nodeOutput{done: make(chan struct{})}
	n.procs, n.stdins, n.outs = append(n.procs, cmd), append(n.stdins, stdin), append(n.outs, out)
	lines := make(chan string, 1)
	go func() {
		defer close(out.done)
		sc := bufio.NewScanner(stdout)
		first := ""
		if sc.Scan() {
			first = sc.Text()
		}
		lines <- strings.TrimSpace(first)
		for sc.Scan() {
			out.lines = append(out.lines, sc.Text())
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(line, "listening ")
		if !ok {
			return "", fmt.Errorf("floor node %v did not start: %q", args, line)
		}
		return addr, nil
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("floor node %v did not start in 30s", args)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// contextSwitches returns each node's context switches so far, or nil where the
// system does not tell.
func (n *floorNodes) contextSwitches() []int64 {
	out := make([]int64, len(n.procs))
	for i, cmd := range n.procs {
		v, ok := processContextSwitches(cmd.Process.Pid)
		if !ok {
			return nil
		}
		out[i] = v
	}
	return out
}

// stop ends every node: their standard input closes, and a node still running after
// 5 s is killed. A second call finds them ended and returns at once.
func (n *floorNodes) stop() {
	for _, in := range n.stdins {
		in.Close()
	}
	for i, cmd := range n.procs {
		done := make(chan struct{})
		go func() {
			<-n.outs[i].done // its output read to the end before Wait closes the pipe
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
}

// cpu returns the CPU time (user and system) the nodes used, once stop has run.
func (n *floorNodes) cpu() time.Duration {
	var total time.Duration
	for _, cmd := range n.procs {
		if cmd.ProcessState != nil {
			total += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
	}
	return total
}

// floorMaxFrame bounds a floor frame's body.
const floorMaxFrame = 16 << 20

// The first byte a connection to the floor leader sends says who it is.
const (
	floorRoleClient   = 'C'
	floorRoleFollower = 'F'
)

// readFloorFrame reads one frame (a 4-byte big-endian length, then the body) into
// *buf, growing it when needed, and returns the body.
func readFloorFrame(r *bufio.Reader, buf *[]byte) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n > floorMaxFrame {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	if n > cap(*buf) {
		*buf = make([]byte, n)
	}
	body := (*buf)[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// floorOffsetFrame returns a frame carrying one offset.
func floorOffsetFrame(offset int64) []byte {
	b := make([]byte, 12)
	binary.BigEndian.PutUint32(b, 8)
	binary.BigEndian.PutUint64(b[4:], uint64(offset))
	return b
}
