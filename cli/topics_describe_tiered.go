package cli

// The tiered storage (KIP-405) columns of `petrel topics describe`: for a topic with
// remote.storage.enable=true each partition line also shows its log start offset, its
// local log start offset and its highest offset copied to remote storage, as the
// partition leader answers ListOffsets -2, -4 (EARLIEST_LOCAL_TIMESTAMP) and -5
// (LATEST_TIERED_TIMESTAMP). Other topics' lines stay kafka-topics.sh's.

import (
	"context"
	"fmt"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
)

// ListOffsets' special timestamps for the two tiers (KIP-405, KIP-1005).
const (
	earliestLocalTimestamp = -4
	latestTieredTimestamp  = -5
)

// tieredOffsets are a tiered partition's offsets across the two tiers; -1 for a
// highest copied offset means nothing is copied yet.
type tieredOffsets struct {
	LogStartOffset      int64 `json:"log_start_offset"`
	LocalLogStartOffset int64 `json:"local_log_start_offset"`
	HighestCopiedOffset int64 `json:"highest_copied_offset"`
}

// remoteStorageEnabled reports whether a topic's configs turn tiered storage on.
func remoteStorageEnabled(tc topicConfig) bool {
	for _, cfg := range tc.overrides {
		if cfg.Key == "remote.storage.enable" && cfg.Value != nil && strings.EqualFold(*cfg.Value, "true") {
			return true
		}
	}
	return false
}

// listTieredOffsets lists the tiered offsets of topics' partitions; a partition whose
// three answers did not all come is left out (its line shows no tiered fields).
func listTieredOffsets(ctx context.Context, cl *clientcmd.Client, topics []string) (map[string]map[int32]tieredOffsets, error) {
	out := map[string]map[int32]tieredOffsets{}
	if len(topics) == 0 {
		return out, nil
	}
	adm := cl.Admin()
	var listed [3]kadm.ListedOffsets
	var err error
	if listed[0], err = adm.ListStartOffsets(ctx, topics...); err != nil && len(listed[0]) == 0 {
		return nil, fmt.Errorf("list log start offsets: %w", cl.Explain(err))
	}
	for i, ts := range []int64{earliestLocalTimestamp, latestTieredTimestamp} {
		if listed[i+1], err = adm.ListOffsetsAfterMilli(ctx, ts, topics...); err != nil && len(listed[i+1]) == 0 {
			return nil, fmt.Errorf("list tiered offsets (ListOffsets %d): %w", ts, cl.Explain(err))
		}
	}
	listed[0].Each(func(o kadm.ListedOffset) {
		local, ok1 := listed[1].Lookup(o.Topic, o.Partition)
		copied, ok2 := listed[2].Lookup(o.Topic, o.Partition)
		if o.Err != nil || !ok1 || local.Err != nil || !ok2 || copied.Err != nil {
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]tieredOffsets{}
		}
		out[o.Topic][o.Partition] = tieredOffsets{LogStartOffset: o.Offset, LocalLogStartOffset: local.Offset, HighestCopiedOffset: copied.Offset}
	})
	return out, nil
}

// writeTieredFields appends a tiered partition's offsets to its describe line.
func writeTieredFields(w *strings.Builder, t *tieredOffsets) {
	if t == nil {
		return
	}
	fmt.Fprintf(w, "\tLogStartOffset: %d\tLocalLogStartOffset: %d\tHighestCopiedOffset: %d",
		t.LogStartOffset, t.LocalLogStartOffset, t.HighestCopiedOffset)
}
