package workload

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// checkGroup refuses a group that already has committed offsets for the topic: the
// group's consumers must start from the earliest offset (auto.offset.reset=earliest,
// as a new group does) for "acknowledged records the group never received" to be
// exact, and an old group's offsets on a recreated topic would look like a commit that
// went backwards.
func (r *runner) checkGroup(ctx context.Context, adm *kadm.Client) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DeliveryTimeout)
	defer cancel()
	resps, err := adm.FetchOffsets(ctx, r.cfg.Group)
	if err != nil {
		return fmt.Errorf("fetching the committed offsets of group %q: %w", r.cfg.Group, err)
	}
	found := 0
	resps.Each(func(o kadm.OffsetResponse) {
		if o.Topic == r.cfg.Topic && o.Err == nil && o.At >= 0 {
			found++
		}
	})
	if found > 0 {
		return fmt.Errorf("group %q already has committed offsets for topic %q (%d partitions): "+
			"give a new group, or delete the group first", r.cfg.Group, r.cfg.Topic, found)
	}
	return nil
}

// warnTopicConfig warns when the topic's configuration could delete records during the
// run: compaction, a size retention, or a time retention shorter than the run may last.
// Such records would look lost.
func (r *runner) warnTopicConfig(ctx context.Context, adm *kadm.Client) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.DeliveryTimeout)
	defer cancel()
	rcs, err := adm.DescribeTopicConfigs(ctx, r.cfg.Topic)
	if err != nil || len(rcs) == 0 || rcs[0].Err != nil {
		r.cfg.Logger.Debug("describing the topic's configuration", "error", err)
		return
	}
	window := r.cfg.Duration
	if window == 0 {
		window = time.Hour
	}
	window += 2*r.cfg.DrainTimeout + r.cfg.DeliveryTimeout
	for _, c := range rcs[0].Configs {
		if c.Value == nil {
			continue
		}
		v := *c.Value
		n, nerr := strconv.ParseInt(v, 10, 64)
		switch {
		case c.Key == "cleanup.policy" && strings.Contains(v, "compact"):
			r.warn("topic %s has cleanup.policy=%s: compaction can remove records of the run, which then look lost", r.cfg.Topic, v)
		case c.Key == "retention.ms" && nerr == nil && n >= 0 && time.Duration(n)*time.Millisecond <= window:
			r.warn("topic %s has retention.ms=%d, within how long the run may take (%s): deleted records look lost", r.cfg.Topic, n, window)
		case c.Key == "retention.bytes" && nerr == nil && n >= 0:
			r.warn("topic %s has retention.bytes=%d: records deleted by size retention during the run look lost", r.cfg.Topic, n)
		}
	}
}

// warn notes a warning and passes it to Config.OnWarning.
func (r *runner) warn(format string, args ...any) {
	r.note(format, args...)
	if r.cfg.OnWarning != nil {
		r.cfg.OnWarning(fmt.Sprintf(format, args...))
	}
}
