package cli

// The progress view of `petrel reassign --verify`: for each replica being added, the
// bytes it holds against the leader's (DescribeLogDirs, key 35, asked of each broker),
// the percentage, and the copy rate from two samples --rate-interval apart.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// movingPartition is one partition of a running reassignment.
type movingPartition struct {
	topic     string
	partition int32
	leader    int32
	adding    []int32
}

// replicaKey names one replica: a partition on a broker.
type replicaKey struct {
	broker    int32
	topic     string
	partition int32
}

// sizeSample is every replica size DescribeLogDirs reported, when it was taken, and the
// brokers that did not answer.
type sizeSample struct {
	at     time.Time
	sizes  map[replicaKey]int64
	failed map[int32]error
}

// sizesOf looks key up in s, which may be nil.
func (s *sizeSample) sizesOf(key replicaKey) (int64, bool) {
	if s == nil {
		return 0, false
	}
	v, ok := s.sizes[key]
	return v, ok
}

// sampleSizes asks the leader and each adding replica's broker of moving for the sizes
// of those partitions' replicas, one DescribeLogDirs per broker.
func sampleSizes(ctx context.Context, adm *kadm.Client, moving []movingPartition) sizeSample {
	s := sizeSample{at: time.Now(), sizes: map[replicaKey]int64{}, failed: map[int32]error{}}
	set := kadm.TopicsSet{}
	var brokers []int32
	for _, m := range moving {
		set.Add(m.topic, m.partition)
		brokers = append(brokers, m.leader)
		brokers = append(brokers, m.adding...)
	}
	slices.Sort(brokers)
	for _, id := range slices.Compact(brokers) {
		if id < 0 {
			continue
		}
		dirs, err := adm.DescribeBrokerLogDirs(ctx, id, set)
		if err == nil {
			err = dirs.Error()
		}
		if err != nil {
			s.failed[id] = err
			continue
		}
		dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
			if !p.IsFuture {
				s.sizes[replicaKey{id, p.Topic, p.Partition}] += p.Size
			}
		})
	}
	s.at = time.Now()
	return s
}

// printProgress prints, under a partition still moving, one line per adding replica:
// its bytes of the leader's, the percentage, and the rate between first and second
// (omitted when second is nil).
func printProgress(w io.Writer, m movingPartition, first sizeSample, second *sizeSample) {
	leaderKey := replicaKey{m.leader, m.topic, m.partition}
	if _, ok := second.sizesOf(leaderKey); !ok && second != nil {
		// The leader moved or dropped its replica between the samples (the move's last
		// step): show the first sample, without a rate.
		second = nil
	}
	last := first
	if second != nil {
		last = *second
	}
	total, ok := last.sizes[leaderKey]
	if !ok {
		reason := "no answer"
		if err := last.failed[m.leader]; err != nil {
			reason = err.Error()
		}
		fmt.Fprintf(w, "  leader %d: size unknown (%s)\n", m.leader, reason)
		return
	}
	for _, id := range m.adding {
		key := replicaKey{id, m.topic, m.partition}
		got, ok := last.sizes[key]
		if !ok {
			if err := last.failed[id]; err != nil {
				fmt.Fprintf(w, "  replica %d: size unknown (%v)\n", id, err)
			} else {
				fmt.Fprintf(w, "  replica %d: not started\n", id)
			}
			continue
		}
		pct := 100.0
		if total > 0 {
			pct = min(100, 100*float64(got)/float64(total))
		}
		line := fmt.Sprintf("  replica %d: %d of %d bytes caught up (%.1f%%) from leader %d", id, got, total, pct, m.leader)
		if second != nil {
			if before, ok := first.sizes[key]; ok {
				if secs := second.at.Sub(first.at).Seconds(); secs > 0 {
					line += fmt.Sprintf(", %.0f B/s", max(0, float64(got-before)/secs))
				}
			}
		}
		fmt.Fprintln(w, line)
	}
}

// sampleProgress takes the samples of the progress view: one, or two rateInterval
// apart (bounded by ctx) when rateInterval > 0.
func sampleProgress(ctx context.Context, adm *kadm.Client, moving []movingPartition, rateInterval time.Duration) (sizeSample, *sizeSample) {
	first := sampleSizes(ctx, adm, moving)
	if rateInterval <= 0 || len(moving) == 0 {
		return first, nil
	}
	select {
	case <-time.After(rateInterval):
	case <-ctx.Done():
		return first, nil
	}
	second := sampleSizes(ctx, adm, moving)
	return first, &second
}
