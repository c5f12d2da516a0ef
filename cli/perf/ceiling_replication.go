package perf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrel-broker/petrel/segment"
)

// The replication of a canned cluster (`perf produce-ceiling --replicas`): each
// follower fetches from each other node the partitions that node leads, as a Kafka
// follower does, over a protocol that carries nothing but positions and bytes.
//
//	follower → leader, once:  its node id (one byte)
//	fetch:   [size uint32] then per partition [partition int32][position int64]
//	answer:  [size uint32][count int32] then per partition [partition int32][length int32],
//	         then the partitions' bytes in the same order
//
// A fetch's positions are the bytes the follower has fsynced, which acknowledges them;
// the leader answers with the whole appends past them that fit in Kafka's follower
// fetch limits (ceilingFetchMaxBytes per partition, ceilingFetchResponseMaxBytes per
// answer, the first append whole) once there is one, or empty after ceilingFetchWait,
// as replica.fetch.wait.max.ms bounds a parked Kafka fetch.

// The follower fetch limits of Kafka's defaults, as a Petrel follower asks for them.
const (
	ceilingFetchWait             = 500 * time.Millisecond // replica.fetch.wait.max.ms: how long a fetch with nothing to read waits
	ceilingFetchMaxBytes         = 1 << 20                // replica.fetch.max.bytes: per partition
	ceilingFetchResponseMaxBytes = 10 << 20               // replica.fetch.response.max.bytes: per answer
)

// openReplicatedStore opens the store of node self of a canned cluster of nodes: a
// log for each partition it leads (partition % nodes == self), waiting for the other
// nodes' acknowledgements.
func openReplicatedStore(dir string, partitions int, self, nodes int32) (*syncStore, error) {
	st, err := openStore(dir, partitions, func(p int32) bool { return p%nodes == self }, int(nodes)-1)
	if err != nil {
		return nil, err
	}
	st.replicated = true
	return st, nil
}

// followerSlot is the place of node id among a leader's acknowledgements: the other
// nodes in id order.
func followerSlot(id, self int32) int {
	if id > self {
		return int(id - 1)
	}
	return int(id)
}

// checkBatches checks every v2 record batch of records, CRC-32C included.
func checkBatches(records []byte) error {
	for len(records) > 0 {
		h, err := segment.ParseBatchHeader(records)
		if err != nil {
			return err
		}
		if h.Size() > int64(len(records)) {
			return fmt.Errorf("a batch of %d bytes in %d", h.Size(), len(records))
		}
		if _, err := segment.ValidateBatch(records[:h.Size()]); err != nil {
			return err
		}
		records = records[h.Size():]
	}
	return nil
}

// serveFollower answers the fetches of the follower on conn from the logs this node
// leads, sending their bytes from the files (sendfile where the system has it).
func (st *syncStore) serveFollower(conn net.Conn, self, nodes int32) error {
	var id [1]byte
	if _, err := io.ReadFull(conn, id[:]); err != nil {
		return err
	}
	follower := int32(id[0])
	if follower == self || follower >= nodes {
		return fmt.Errorf("fetch from node %d of %d", follower, nodes)
	}
	slot := followerSlot(follower, self)
	files := map[int32]*os.File{} // a reader per partition, at its own file offset
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	r := bufio.NewReader(conn)
	var body, out []byte
	var parts []int32
	var positions, lengths []int64
	timer := time.NewTimer(ceilingFetchWait)
	defer timer.Stop()
	for {
		var err error
		if body, err = readFloorFrame(r, &body); err != nil {
			return err
		}
		if len(body)%12 != 0 {
			return fmt.Errorf("fetch of %d bytes", len(body))
		}
		parts, positions = parts[:0], positions[:0]
		for ; len(body) > 0; body = body[12:] {
			p, pos := int32(binary.BigEndian.Uint32(body)), int64(binary.BigEndian.Uint64(body[4:]))
			if p < 0 || int(p) >= len(st.logs) || st.logs[p] == nil {
				return fmt.Errorf("fetch of partition %d, not led here", p)
			}
			if err := st.logs[p].ack(slot, pos); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
			parts, positions = append(parts, p), append(positions, pos)
		}
		timer.Reset(ceilingFetchWait)
		if lengths, err = st.waitForBytes(parts, positions, lengths, timer.C); err != nil {
			return err
		}
		size := 4 + 8*len(parts)
		for _, n := range lengths {
			size += int(n)
		}
		out = binary.BigEndian.AppendUint32(out[:0], uint32(size))
		out = binary.BigEndian.AppendUint32(out, uint32(len(parts)))
		for i, p := range parts {
			out = binary.BigEndian.AppendUint32(out, uint32(p))
			out = binary.BigEndian.AppendUint32(out, uint32(lengths[i]))
		}
		if _, err := conn.Write(out); err != nil {
			return err
		}
		for i, p := range parts {
			if lengths[i] == 0 {
				continue
			}
			f := files[p]
			if f == nil {
				if f, err = os.Open(st.logs[p].f.Name()); err != nil {
					return err
				}
				files[p] = f
			}
			if _, err := f.Seek(positions[i], io.SeekStart); err != nil {
				return err
			}
			if _, err := io.CopyN(conn, f, lengths[i]); err != nil {
				return err
			}
		}
	}
}

// waitForBytes returns how many bytes of each of parts past its position the answer
// carries, into lengths, once one has any or expired fires (all none then).
func (st *syncStore) waitForBytes(parts []int32, positions, lengths []int64, expired <-chan time.Time) ([]int64, error) {
	for {
		appended := st.appendedSince() // before reading the ends: no append is missed
		lengths = lengths[:0]
		total := int64(0)
		for i, p := range parts {
			limit := min(ceilingFetchMaxBytes, ceilingFetchResponseMaxBytes-total)
			n := st.logs[p].fetchable(positions[i], limit, total == 0)
			lengths = append(lengths, n)
			total += n
		}
		if total > 0 {
			return lengths, nil
		}
		select {
		case <-appended:
		case <-expired:
			return lengths, nil
		case <-st.closed:
			return nil, net.ErrClosed
		}
	}
}

// replicaStats counts a follower's writes and fsyncs over all its leaders.
type replicaStats struct {
	written, fsyncs atomic.Int64
}

// follow fetches from the leader on conn, as node self, the partitions it leads:
// each answer's bytes checked (CRC-32C) and written to a file per partition in dir,
// fsynced (the files in parallel), and acknowledged by the next fetch.
func follow(conn net.Conn, self int32, parts []int32, dir string, stats *replicaStats) error {
	files := make(map[int32]*os.File, len(parts))
	defer func() {
		for _, f := range files {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	positions := make(map[int32]int64, len(parts))
	for _, p := range parts {
		f, err := os.CreateTemp(dir, "produce-ceiling-replica-*.log")
		if err != nil {
			return err
		}
		files[p] = f
	}
	if _, err := conn.Write([]byte{byte(self)}); err != nil {
		return err
	}
	r := bufio.NewReaderSize(conn, 1<<16)
	var fetch, buf, entries []byte
	var touched []*os.File
	for {
		fetch = binary.BigEndian.AppendUint32(fetch[:0], uint32(12*len(parts)))
		for _, p := range parts {
			fetch = binary.BigEndian.AppendUint32(fetch, uint32(p))
			fetch = binary.BigEndian.AppendUint64(fetch, uint64(positions[p]))
		}
		if _, err := conn.Write(fetch); err != nil {
			return err
		}
		var hdr [8]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		count := int(binary.BigEndian.Uint32(hdr[4:]))
		if count != len(parts) {
			return fmt.Errorf("an answer for %d partitions, %d asked", count, len(parts))
		}
		entries = slices.Grow(entries[:0], 8*count)[:8*count]
		if _, err := io.ReadFull(r, entries); err != nil {
			return err
		}
		size := int64(4 + 8*count)
		for i := range count {
			size += int64(binary.BigEndian.Uint32(entries[8*i+4:]))
		}
		if size != int64(binary.BigEndian.Uint32(hdr[:4])) {
			return fmt.Errorf("an answer of %d bytes whose parts add up to %d", binary.BigEndian.Uint32(hdr[:4]), size)
		}
		touched = touched[:0]
		for i := range count {
			p, n := int32(binary.BigEndian.Uint32(entries[8*i:])), int(binary.BigEndian.Uint32(entries[8*i+4:]))
			f := files[p]
			if f == nil || n > cannedMaxRequest {
				return fmt.Errorf("an answer of %d bytes for partition %d", n, p)
			}
			if n == 0 {
				continue
			}
			if cap(buf) < n {
				buf = make([]byte, n)
			}
			if _, err := io.ReadFull(r, buf[:n]); err != nil {
				return err
			}
			if err := checkBatches(buf[:n]); err != nil {
				return fmt.Errorf("partition %d: %w", p, err)
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return err
			}
			positions[p] += int64(n)
			stats.written.Add(int64(n))
			touched = append(touched, f)
		}
		if err := syncAll(touched); err != nil {
			return err
		}
		stats.fsyncs.Add(int64(len(touched)))
	}
}

// syncAll fsyncs files, at once when there are several, as a Petrel follower does.
func syncAll(files []*os.File) error {
	if len(files) == 1 {
		return files[0].Sync()
	}
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Go(func() { errs[i] = f.Sync() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
