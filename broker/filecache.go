package broker

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/petrel-broker/petrel/segment"
)

// openSegmentFilesProperty bounds the segment files the broker keeps open.
const openSegmentFilesProperty = "petrel.log.open.segment.files.max"

// minSegmentFileCache is the smallest derived cache, in segments.
const minSegmentFileCache = 16

// newSegmentFileCache returns the broker's FileCache of segment files: the property's
// descriptors, or, at -1, the process's one cache (brokers of one process, as in
// `petrel dev` and the tests, share the process's limit) of half its open-file limit
// (RLIMIT_NOFILE, which the Go runtime raises to the hard limit at start), leaving the
// other half to connections, Raft, checkpoints and the cleaner. Each open segment holds
// segment.SegmentFiles descriptors and up to two memory maps, so the derived cache also
// keeps the maps to half of vm.max_map_count (65,530 by default), the other half left
// to the Go runtime and the rest: half of 20,000 descriptors keeps 3,333 segments and
// at most 6,666 maps open, and an open-file limit of 1,048,576 (Docker's default) is
// held to 16,382 segments, where half of it would have mapped 349,524.
func newSegmentFileCache(cfg *Config) *segment.FileCache {
	files := cfg.int64Value(openSegmentFilesProperty)
	if files < 0 {
		return processSegmentFiles()
	}
	return segment.NewFileCache(max(int(files/segment.SegmentFiles), 1))
}

var processSegmentFiles = sync.OnceValue(func() *segment.FileCache {
	return segment.NewFileCache(int(defaultSegmentFiles() / segment.SegmentFiles))
})

// maxMapCountFile is Linux's vm.max_map_count: the memory maps a process may have.
const maxMapCountFile = "/proc/sys/vm/max_map_count"

// defaultMaxMapCount is vm.max_map_count's default, taken when the file is unreadable.
const defaultMaxMapCount = 65530

func defaultSegmentFiles() int64 {
	var lim syscall.Rlimit
	nofile := uint64(0)
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		nofile = lim.Cur
	}
	maps := int64(defaultMaxMapCount)
	if b, err := os.ReadFile(maxMapCountFile); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			maps = n
		}
	}
	return segmentFilesFor(nofile, maps)
}

// segmentFilesFor is the derived cache's descriptors for an open-file limit of nofile
// (0: unknown) and a vm.max_map_count of maps: half of nofile, and no more segments
// than a quarter of maps (two maps each, half of the maps kept for the rest).
func segmentFilesFor(nofile uint64, maps int64) int64 {
	if nofile == 0 {
		return minSegmentFileCache * segment.SegmentFiles
	}
	files := int64(min(nofile, 1<<30)) / 2
	files = min(files, maps/4*segment.SegmentFiles)
	return max(files, minSegmentFileCache*segment.SegmentFiles)
}
