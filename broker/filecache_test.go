package broker

import "testing"

// TestSegmentFilesFor: the derived cache takes half of the open-file limit, but never
// more segments than a quarter of vm.max_map_count (two index maps each), so a large
// limit such as Docker's 1,048,576 cannot run the process out of memory maps.
func TestSegmentFilesFor(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		maps   int64
		want   int64
	}{
		{20000, 65530, 10000},             // 3,333 segments, 6,666 maps
		{1 << 20, 65530, 16382 * 3},       // held to 16,382 segments, 32,764 maps
		{1 << 20, 1 << 20, 1 << 19},       // a raised max_map_count: half the limit again
		{0, 65530, 16 * 3},                // limit unknown: the smallest cache
		{20, 65530, 16 * 3},               // a tiny limit: the smallest cache
		{1 << 40, 1 << 40, (1 << 30) / 2}, // capped
	} {
		if got := segmentFilesFor(c.nofile, c.maps); got != c.want {
			t.Errorf("segmentFilesFor(%d, %d) = %d, want %d", c.nofile, c.maps, got, c.want)
		}
	}
}
