package segment

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// checkpointVersion is the version line of every checkpoint file.
const checkpointVersion = 0

// TopicPartition names a partition in per-log-dir checkpoint files.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ReadOffsetCheckpoint reads a per-log-dir offset checkpoint (replication-offset-checkpoint,
// recovery-point-offset-checkpoint, log-start-offset-checkpoint): "0", a count, then
// "topic partition offset" lines. A missing or 0-byte file is an empty checkpoint (as
// Kafka's CheckpointFile reads it; every offset then starts from its safe default). A
// 0-byte leader-epoch-checkpoint, by contrast, is corrupt: the cache is rebuilt.
func ReadOffsetCheckpoint(path string) (map[TopicPartition]int64, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		return map[TopicPartition]int64{}, nil
	}
	lines, err := ReadCheckpoint(path)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, line := range lines {
		f := strings.Split(line, " ")
		if len(f) != 3 {
			return nil, fmt.Errorf("%w: %s: line %q", ErrCorruptCheckpoint, path, line)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || f[0] == "" || p < 0 {
			return nil, fmt.Errorf("%w: %s: line %q", ErrCorruptCheckpoint, path, line)
		}
		out[TopicPartition{f[0], int32(p)}] = o
	}
	return out, nil
}

// WriteOffsetCheckpoint writes offsets atomically in Kafka's checkpoint format, sorted by
// topic and partition.
func WriteOffsetCheckpoint(path string, offsets map[TopicPartition]int64) error {
	keys := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		if tp.Topic == "" || strings.ContainsAny(tp.Topic, " \n") {
			return fmt.Errorf("%w: topic %q in checkpoint %s", ErrInvalidName, tp.Topic, path)
		}
		keys = append(keys, tp)
	}
	slices.SortFunc(keys, func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	lines := make([]string, len(keys))
	for i, tp := range keys {
		lines[i] = fmt.Sprintf("%s %d %d", tp.Topic, tp.Partition, offsets[tp])
	}
	return WriteCheckpoint(path, lines)
}

// ReadCheckpoint returns the entry lines of a checkpoint file after checking its version
// and count. A missing file has no lines.
func ReadCheckpoint(path string) ([]string, error) {
	data, err := ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorruptCheckpoint, path, err)
	}
	if len(lines) < 2 || lines[0] != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("%w: %s: missing or unknown version", ErrCorruptCheckpoint, path)
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n < 0 || n != len(lines)-2 {
		return nil, fmt.Errorf("%w: %s: count %q does not match %d entries", ErrCorruptCheckpoint, path, lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

// WriteCheckpoint writes "0", the count and lines atomically.
func WriteCheckpoint(path string, lines []string) error {
	return WriteFileAtomic(path, encodeCheckpoint(lines))
}

// encodeCheckpoint is a checkpoint file's contents: "0", the count and lines.
func encodeCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// WriteFileAtomic replaces path with data: a temporary file is written and fsynced, renamed
// over path, and the directory fsynced, so a crash leaves the old or the new file whole.
func WriteFileAtomic(path string, data []byte) error {
	if err := WriteFileSynced(path, data); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// WriteFileSynced replaces path with data through a temporary file that is written and
// fsynced before it is renamed over path (Kafka's write, force, atomicMoveWithFallback
// without its directory flush): a crash leaves the old file, or the new one whole, never a
// torn copy. The rename itself is durable only once the directory is fsynced, which the
// caller arranges (a segment roll's or birth's directory fsync, or SyncDir).
func WriteFileSynced(path string, data []byte) error {
	tmp := path + checkpointTempSuffix
	f, err := OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp) // a failed write leaves no temporary file behind
		return err
	}
	return nil
}

// SyncDir fsyncs a directory so that the entries created, renamed and removed in it are
// durable (Kafka's Utils.flushDir).
func SyncDir(dir string) error { return syncDir(dir) }

// syncDir fsyncs a directory so that created, renamed and removed entries are durable.
func syncDir(dir string) error {
	if testSyncDirHook != nil {
		testSyncDirHook(dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// testSyncDirHook, when set by a test, sees every directory fsync before it is made
// (the order of fsyncs and renames is what makes a small file durable). Nil in
// production.
var testSyncDirHook func(dir string)
