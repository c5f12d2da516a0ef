package integration

// The harness's network: every node's Kafka and Raft listeners are wrapped, and every
// connection a node opens (Raft, broker-to-broker Kafka, joining) goes through its
// Config.Dial, so the network sees both ends of every link between nodes and can cut
// one (the in-process stand-in for etcd's bridge.go, or an `ip route blackhole` per
// peer). Partition(i) marks node i as cut off: existing connections of i are closed,
// i's dials and dials to i fail, and its listeners close whatever they accept. Kafka
// connections accepted by a node also feed a recorder of (api key, version) pairs, so
// that a test can report which versions a real client chose.
//
// A connection a node accepted is told apart from a client's by its remote address:
// the dialing node registers the local address of every connection it opens before
// Dial returns, and so before the peer can have sent a byte. The accepting side
// classifies a connection for good once bytes arrive, never earlier.
//
// A one-way cut (CutOneWay) is the other flavour, a blackhole route in one direction:
// nothing is closed or refused. What one node writes to the other is held back, as
// TCP holds unacknowledged bytes, and delivered in order once the cut heals; dials
// between the two hang until then or until the dialer gives up, as a connect whose
// SYN or SYN-ACK is dropped does.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// errLinkCut is what dials, reads and writes on a cut link return.
var errLinkCut = errors.New("harness: link cut by Partition")

// clientSide marks the far end of an accepted connection that no node dialed: a client.
const clientSide = -1

// network is the cluster's switchboard. All methods are safe for concurrent use.
type network struct {
	mu sync.Mutex
	// owner maps every node's Kafka and Raft listener address to its index.
	owner map[string]int
	// cut holds the nodes cut off from the other nodes; the value reports whether
	// clients are cut off too.
	cut map[int]bool
	// links holds the links between two nodes cut on their own (CutLink), the lower
	// index first; the value reports whether only their Kafka traffic is cut.
	links map[[2]int]bool
	// kafkaAddrs are the nodes' Kafka listener addresses.
	kafkaAddrs map[string]bool
	// dialed maps the local address of each open node-dialed connection to the
	// dialing node's index.
	dialed map[string]int
	// conns are the open connections: both ends of node-to-node links, and the
	// broker side of client connections.
	conns map[*netConn]struct{}
	// requests are the Kafka request recorders, by node index.
	requests map[int]*requestLog
	// oneWay holds the one-way cuts, {from, to}: what from writes to to is held back.
	oneWay map[[2]int]bool
	// healed is closed by the heal that ends the current one-way cuts; a held writer
	// or a hanging dial waits on it.
	healed chan struct{}
}

func newNetwork() *network {
	return &network{owner: map[string]int{}, cut: map[int]bool{}, links: map[[2]int]bool{}, kafkaAddrs: map[string]bool{}, dialed: map[string]int{},
		conns: map[*netConn]struct{}{}, requests: map[int]*requestLog{}, oneWay: map[[2]int]bool{}, healed: make(chan struct{})}
}

// cutOneWay holds back, until heal, whatever node from writes to node to; the link
// stays up the other way, and no connection is closed.
func (n *network) cutOneWay(from, to int) {
	n.mu.Lock()
	n.oneWay[[2]int{from, to}] = true
	n.mu.Unlock()
}

// heldLocked reports whether bytes written by node from to node to are held back, and
// returns the channel the heal that releases them closes. n.mu is held.
func (n *network) heldLocked(from, to int) (bool, <-chan struct{}) {
	return from >= 0 && to >= 0 && n.oneWay[[2]int{from, to}], n.healed
}

// blockedLocked reports whether traffic from one end to the other is cut; kafka
// reports whether it is Kafka traffic (not Raft). from is clientSide for a client; to
// is -1 for an address no node owns. n.mu is held.
func (n *network) blockedLocked(from, to int, kafka bool) bool {
	if from >= 0 && from == to {
		return false
	}
	if _, ok := n.cut[from]; ok && from >= 0 {
		return true
	}
	if kafkaOnly, ok := n.links[[2]int{min(from, to), max(from, to)}]; ok && (kafka || !kafkaOnly) { // keys hold node indexes only
		return true
	}
	clientsToo, ok := n.cut[to]
	if !ok || to < 0 {
		return false
	}
	return from >= 0 || clientsToo
}

// partition cuts node i off from every other node and, with clients, from clients
// too; it closes the connections that cross the cut.
func (n *network) partition(i int, clients bool) {
	n.mu.Lock()
	n.cut[i] = clients
	n.closeBlockedAndUnlock()
}

// cutLink cuts the link between nodes i and j both ways (with kafkaOnly, their Kafka
// connections only: Raft goes on), and closes the connections that cross it; each
// keeps its other links.
func (n *network) cutLink(i, j int, kafkaOnly bool) {
	n.mu.Lock()
	n.links[[2]int{min(i, j), max(i, j)}] = kafkaOnly
	n.closeBlockedAndUnlock()
}

// closeBlockedAndUnlock closes the open connections a new cut blocks; it is called with
// n.mu held, and releases it before closing them.
func (n *network) closeBlockedAndUnlock() {
	var doomed []*netConn
	for c := range n.conns {
		if n.blockedLocked(n.fromLocked(c, false), c.to, c.kafka) {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// heal removes every cut, and releases what one-way cuts held back.
func (n *network) heal() {
	n.mu.Lock()
	clear(n.cut)
	clear(n.links)
	if len(n.oneWay) > 0 {
		clear(n.oneWay)
		close(n.healed)
		n.healed = make(chan struct{})
	}
	n.mu.Unlock()
}

// isCut reports whether node i is cut off.
func (n *network) isCut(i int) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.cut[i]
	return ok
}

// own records that addr is one of node i's listeners.
func (n *network) own(addr string, i int) {
	n.mu.Lock()
	n.owner[addr] = i
	n.mu.Unlock()
}

// fromLocked returns c's dialing end: the node that dialed it, or clientSide. An
// accepted connection is classified for good only once bytes have arrived
// (afterData), when a dialing node is sure to have registered it; before that an
// unknown remote address is answered as a client without being remembered. n.mu is
// held.
func (n *network) fromLocked(c *netConn, afterData bool) int {
	if c.resolved {
		return c.from
	}
	from, ok := n.dialed[c.RemoteAddr().String()]
	if !ok {
		from = clientSide
	}
	if ok || afterData {
		c.from, c.resolved = from, true
	}
	return from
}

// dialer returns node i's Config.Dial.
func (n *network) dialer(i int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		n.mu.Lock()
		to, ok := n.owner[addr]
		if !ok {
			to = -1
		}
		kafka := n.kafkaAddrs[addr]
		blocked := n.blockedLocked(i, to, kafka)
		out, healed := n.heldLocked(i, to)
		back, _ := n.heldLocked(to, i)
		n.mu.Unlock()
		if blocked {
			return nil, fmt.Errorf("node %d dialing %s: %w", i, addr, errLinkCut)
		}
		if out || back { // the SYN or the SYN-ACK is dropped: the connect hangs
			select {
			case <-healed:
			case <-ctx.Done():
				return nil, fmt.Errorf("node %d dialing %s across a one-way cut: %w", i, addr, ctx.Err())
			}
		}
		var d net.Dialer
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := &netConn{Conn: raw, net: n, from: i, to: to, kafka: kafka, resolved: true, local: raw.LocalAddr().String(), closed: make(chan struct{})}
		n.mu.Lock()
		if n.blockedLocked(i, to, kafka) { // cut while dialing
			n.mu.Unlock()
			raw.Close()
			return nil, fmt.Errorf("node %d dialing %s: %w", i, addr, errLinkCut)
		}
		n.dialed[c.local] = i
		n.conns[c] = struct{}{}
		n.mu.Unlock()
		return c, nil
	}
}

// listen binds addr ("127.0.0.1:0" for a fresh port) for node i, retrying for a while
// if a restarted node's port is briefly unavailable. kafka listeners record requests.
func (n *network) listen(i int, addr string, kafka bool) (net.Listener, error) {
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if ln, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // waiting for the OS to free a port: no peer to sync with
	}
	if err != nil {
		return nil, fmt.Errorf("node %d: listening on %s: %w", i, addr, err)
	}
	n.own(ln.Addr().String(), i)
	fl := &netListener{Listener: ln, net: n, node: i}
	if kafka {
		n.mu.Lock()
		n.kafkaAddrs[ln.Addr().String()] = true
		if n.requests[i] == nil {
			n.requests[i] = newRequestLog()
		}
		fl.requests = n.requests[i]
		n.mu.Unlock()
	}
	return fl, nil
}

// closeAccepted closes every Kafka connection node i accepted (clients reconnect).
func (n *network) closeAccepted(i int) {
	n.mu.Lock()
	var doomed []*netConn
	for c := range n.conns {
		if c.to == i && c.sniffer != nil {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

// closeAll closes every connection (cleanup).
func (n *network) closeAll() {
	n.mu.Lock()
	doomed := make([]*netConn, 0, len(n.conns))
	for c := range n.conns {
		doomed = append(doomed, c)
	}
	n.mu.Unlock()
	for _, c := range doomed {
		c.Close()
	}
}

func (n *network) forget(c *netConn) {
	n.mu.Lock()
	delete(n.conns, c)
	if c.local != "" && n.dialed[c.local] == c.from {
		delete(n.dialed, c.local)
	}
	n.mu.Unlock()
}

// requestLog returns node i's request recorder.
func (n *network) requestLog(i int) *requestLog {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.requests[i] == nil {
		n.requests[i] = newRequestLog()
	}
	return n.requests[i]
}

// netListener is one node's listener as the network wraps it.
type netListener struct {
	net.Listener
	net  *network
	node int
	// requests is set on Kafka listeners: accepted connections feed it.
	requests *requestLog
}

// Accept returns the next connection the cut allows; while node is cut off from
// everyone, connections are closed as they arrive.
func (l *netListener) Accept() (net.Conn, error) {
	for {
		raw, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := l.net
		n.mu.Lock()
		if clientsToo, cut := n.cut[l.node]; cut && clientsToo {
			n.mu.Unlock()
			raw.Close()
			continue
		}
		c := &netConn{Conn: raw, net: n, to: l.node, kafka: l.requests != nil, closed: make(chan struct{})}
		if l.requests != nil {
			c.sniffer = &frameSniffer{log: l.requests}
		}
		n.conns[c] = struct{}{}
		n.mu.Unlock()
		return c, nil
	}
}

// netConn is one end of a connection the network watches. from and to are node
// indices (from is clientSide for a client); from is known at once for a dialed
// connection and classified later for an accepted one.
type netConn struct {
	net.Conn
	net *network
	to  int
	// kafka is set on a connection to a Kafka listener (not Raft).
	kafka bool
	// local is the local address of a dialed connection ("" when accepted).
	local string
	// from and resolved are guarded by net.mu.
	from     int
	resolved bool
	// sniffer records Kafka request headers (accepted Kafka connections only); only
	// the connection's reader goroutine touches it.
	sniffer   *frameSniffer
	closeOnce sync.Once
	closed    chan struct{} // closed by Close

	// held holds, in order, what was written while a one-way cut held this end's
	// writes back; a goroutine delivers it once the cut heals. Writes wait behind it.
	heldMu   sync.Mutex
	held     []byte
	draining bool // a delivering goroutine runs; under heldMu
}

// maxHeld bounds the bytes one connection end holds back: a writer beyond it waits, as
// a full socket buffer makes it.
const maxHeld = 8 << 20

// allowed reports whether the link is up; afterData is set once bytes have arrived,
// when an accepted connection can be classified.
func (c *netConn) allowed(afterData bool) bool {
	n := c.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if !c.resolved && !afterData {
		// Not classified yet: only a cut of everything applies.
		clientsToo, cut := n.cut[c.to]
		return !(cut && clientsToo)
	}
	return !n.blockedLocked(n.fromLocked(c, afterData), c.to, c.kafka)
}

func (c *netConn) Read(p []byte) (int, error) {
	if !c.allowed(false) {
		c.Close()
		return 0, errLinkCut
	}
	k, err := c.Conn.Read(p)
	if k > 0 {
		if !c.allowed(true) {
			c.Close()
			return 0, errLinkCut
		}
		if c.sniffer != nil {
			c.sniffer.feed(p[:k])
		}
	}
	return k, err
}

func (c *netConn) Write(p []byte) (int, error) {
	if !c.allowed(false) {
		c.Close()
		return 0, errLinkCut
	}
	if c.hold(p) {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// endsLocked returns the node writing on this end and the node reading the other end
// (clientSide, or -1 for an address no node owns, where no one-way cut applies). n.mu
// is held.
func (c *netConn) endsLocked() (writer, reader int) {
	if c.local != "" { // dialed: this end is the dialing node's
		return c.from, c.to
	}
	return c.to, c.net.fromLocked(c, false)
}

// hold keeps p back when a one-way cut holds this end's writes, or when earlier bytes
// are still held (order is kept), and reports whether it did; it waits while maxHeld
// bytes are held.
func (c *netConn) hold(p []byte) bool {
	for {
		n := c.net
		n.mu.Lock()
		writer, reader := c.endsLocked()
		cut, healed := n.heldLocked(writer, reader)
		n.mu.Unlock()
		c.heldMu.Lock()
		if !cut && len(c.held) == 0 && !c.draining {
			c.heldMu.Unlock()
			return false
		}
		if len(c.held) < maxHeld {
			c.held = append(c.held, p...)
			if !c.draining {
				c.draining = true
				go c.deliverHeld(healed)
			}
			c.heldMu.Unlock()
			return true
		}
		c.heldMu.Unlock()
		select { // full: wait for the heal, then for the delivery to make room
		case <-healed:
		case <-c.closed:
			return true // the bytes are lost with the connection, as TCP's are
		}
		runtime.Gosched()
	}
}

// deliverHeld writes what was held back once healed is closed, then what was held
// while it wrote, until nothing is; a cut made again meanwhile holds the rest back
// until its own heal.
func (c *netConn) deliverHeld(healed <-chan struct{}) {
	for {
		select {
		case <-healed:
		case <-c.closed:
			c.heldMu.Lock()
			c.held, c.draining = nil, false
			c.heldMu.Unlock()
			return
		}
		c.heldMu.Lock()
		chunk := c.held
		c.held = nil
		if len(chunk) == 0 {
			c.draining = false
			c.heldMu.Unlock()
			return
		}
		c.heldMu.Unlock()
		if _, err := c.Conn.Write(chunk); err != nil {
			c.Close()
			c.heldMu.Lock()
			c.held, c.draining = nil, false
			c.heldMu.Unlock()
			return
		}
		n := c.net
		n.mu.Lock()
		writer, reader := c.endsLocked()
		cut, next := n.heldLocked(writer, reader) // cut again while it wrote: wait for that heal
		n.mu.Unlock()
		if !cut {
			next = closedChan
		}
		healed = next
	}
}

// closedChan is a closed channel: a wait on it ends at once.
var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

func (c *netConn) Close() error {
	err := net.ErrClosed
	c.closeOnce.Do(func() {
		err = c.Conn.Close()
		close(c.closed)
		c.net.forget(c)
	})
	return err
}

// frameSniffer follows the Kafka framing of a request stream and records each
// request's api key and version. Anything that is not a frame stops it.
type frameSniffer struct {
	log  *requestLog
	hdr  [8]byte // size, api key, api version
	have int     // bytes of hdr collected
	skip int64   // bytes of the current request body still to pass
	bad  bool
}

func (s *frameSniffer) feed(p []byte) {
	for len(p) > 0 && !s.bad {
		if s.skip > 0 {
			k := min(int64(len(p)), s.skip)
			p, s.skip = p[k:], s.skip-k
			continue
		}
		k := copy(s.hdr[s.have:], p)
		p, s.have = p[k:], s.have+k
		if s.have >= 4 && int32(binary.BigEndian.Uint32(s.hdr[:4])) < 4 {
			s.bad = true
			return
		}
		if s.have < len(s.hdr) {
			continue
		}
		s.log.record(int16(binary.BigEndian.Uint16(s.hdr[4:6])), int16(binary.BigEndian.Uint16(s.hdr[6:8])))
		s.skip = int64(int32(binary.BigEndian.Uint32(s.hdr[:4]))) - 4
		s.have = 0
	}
}

// requestLog counts the requests a node received by (api key, version), across its
// restarts. Safe for concurrent use.
type requestLog struct {
	mu   sync.Mutex
	seen map[[2]int16]int // guarded by mu
}

func newRequestLog() *requestLog { return &requestLog{seen: map[[2]int16]int{}} }

func (r *requestLog) record(key, version int16) {
	r.mu.Lock()
	r.seen[[2]int16{key, version}]++
	r.mu.Unlock()
}

func (r *requestLog) saw(key, version int16) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[[2]int16{key, version}] > 0
}

// summary lists the requests seen, as "Metadata v11 x3, Produce v9 x50".
func (r *requestLog) summary() string {
	r.mu.Lock()
	keys := make([][2]int16, 0, len(r.seen))
	counts := make(map[[2]int16]int, len(r.seen))
	for k, v := range r.seen {
		keys = append(keys, k)
		counts[k] = v
	}
	r.mu.Unlock()
	slices.SortFunc(keys, func(a, b [2]int16) int {
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		return int(a[1]) - int(b[1])
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := kmsg.NameForKey(k[0])
		if name == "" {
			name = fmt.Sprintf("key%d", k[0])
		}
		parts = append(parts, fmt.Sprintf("%s v%d x%d", name, k[1], counts[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
