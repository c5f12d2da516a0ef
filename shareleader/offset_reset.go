package shareleader

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/replication"
)

// resolveStartOffset is where a share partition with no durable state starts, by
// share.auto.offset.reset: "latest" (and anything unknown: Kafka's default) the high
// watermark, "earliest" the log start offset, "by_duration:<ISO-8601 duration>" the
// first record written at or after now minus the duration (the high watermark when
// there is none), as Kafka's SharePartition.startOffsetDuringInitialization.
func resolveStartOffset(r Replica, reset string, now time.Time) (int64, error) {
	q := replication.OffsetQuery{Timestamp: -1, CurrentLeaderEpoch: -1, ReplicaID: -1}
	switch {
	case reset == "earliest":
		q.Timestamp = -2
	case strings.HasPrefix(reset, "by_duration:"):
		d, err := parseISODuration(strings.TrimPrefix(reset, "by_duration:"))
		if err != nil {
			return 0, fmt.Errorf("%w: share.auto.offset.reset %q: %w", ErrInvalidRequest, reset, err)
		}
		q.Timestamp = now.Add(-d).UnixMilli()
	}
	lo, err := r.ListOffset(q)
	if err != nil {
		return 0, err
	}
	if lo.Offset < 0 { // no record that recent
		q.Timestamp = -1
		if lo, err = r.ListOffset(q); err != nil {
			return 0, err
		}
	}
	return lo.Offset, nil
}

// parseISODuration parses the ISO-8601 durations Kafka's by_duration takes
// (java.time.Duration.parse): P[nD][T[nH][nM][n[.n]S]].
func parseISODuration(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(strings.ToUpper(s), "P")
	if !ok || rest == "" {
		return 0, fmt.Errorf("not an ISO-8601 duration")
	}
	var d time.Duration
	inTime := false
	for rest != "" {
		if rest[0] == 'T' {
			inTime, rest = true, rest[1:]
			continue
		}
		i := strings.IndexAny(rest, "DHMS")
		if i <= 0 {
			return 0, fmt.Errorf("not an ISO-8601 duration")
		}
		n, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("not an ISO-8601 duration")
		}
		unit := map[byte]time.Duration{'D': 24 * time.Hour, 'H': time.Hour, 'M': time.Minute, 'S': time.Second}[rest[i]]
		if (rest[i] == 'D') == inTime {
			return 0, fmt.Errorf("not an ISO-8601 duration")
		}
		d += time.Duration(n * float64(unit))
		rest = rest[i+1:]
	}
	return d, nil
}
