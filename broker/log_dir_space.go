package broker

// The free-space floor of the log directory (petrel.log.dir.min.free.bytes), a
// protection Kafka does not have: below it, Produce is refused with a retriable error
// before the file system is actually full, so that producers back off and retry while
// an operator adds space or retention frees it, instead of the log directory going
// offline at its first failed write (offline_replicas.go). Replication, coordinator
// writes and transaction markers still append: they are small, and a follower that
// stopped fetching would leave the ISR.
//
// The error is NOT_ENOUGH_REPLICAS (19): the one refusal before the append that every
// client retries — Java's NotEnoughReplicasException is a RetriableException, and
// librdkafka, franz-go, sarama, kafka-go and kafkajs retry it — and that says nothing
// was written. KAFKA_STORAGE_ERROR is not retried by every client (and, answered for a
// replica, makes clients look for another leader, which the floor does not move);
// NOT_ENOUGH_REPLICAS_AFTER_APPEND would tell an idempotent producer that the batch
// was written; REQUEST_TIMED_OUT would leave the outcome unknown. The response's error
// message names the floor.

import (
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/segment"
)

// logDirSpace is the log directory's free space against its floor
// (segment.DirSpace), with the refusal Produce answers.
type logDirSpace struct{ *segment.DirSpace }

func newLogDirSpace(dir string, property int64) *logDirSpace {
	return &logDirSpace{segment.NewDirSpace(dir, property)}
}

// belowFloor reports why Produce is refused now, or nil.
func (s *logDirSpace) belowFloor(now time.Time) error {
	free, floor, below := s.BelowFloor(now)
	if !below {
		return nil
	}
	return fmt.Errorf("the log directory's file system has %d bytes free, below %s=%d: produce refused until space is freed",
		free, config.MinFreeBytesProperty, floor)
}
