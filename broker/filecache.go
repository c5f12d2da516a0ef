package broker

import (
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
// `petrel dev` and the tests, share the process's limit) of half its open-file limit (RLIMIT_NOFILE, which the
// Go runtime raises to the hard limit at start), leaving the other half to connections,
// Raft, checkpoints and the cleaner. Each open segment holds segment.SegmentFiles
// descriptors and up to two memory maps, so half of 20,000 descriptors keeps 3,333
// segments and at most 6,666 maps open (vm.max_map_count defaults to 65,530).
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

func defaultSegmentFiles() int64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return minSegmentFileCache * segment.SegmentFiles
	}
	cur := lim.Cur
	if cur > 1<<30 {
		cur = 1 << 30
	}
	return max(int64(cur)/2, minSegmentFileCache*segment.SegmentFiles)
}
