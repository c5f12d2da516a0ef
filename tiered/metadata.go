package tiered

import (
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// Uuid is Kafka's 128-bit id (topic ids, remote segment ids), metadata's type: written
// as Kafka writes it, unpadded URL-safe base64 of 22 characters.
type Uuid = metadata.Uuid

// TopicIDPartition is Kafka's TopicIdPartition: a partition named by its topic's id and
// name.
type TopicIDPartition struct {
	TopicID   Uuid   `json:"topicId"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// RemoteLogSegmentID is Kafka's RemoteLogSegmentId: a partition and an id chosen for
// each copy of a segment, so that a copy retried after a failure never shares objects
// with the failed one.
type RemoteLogSegmentID struct {
	TopicIDPartition TopicIDPartition `json:"topicIdPartition"`
	ID               Uuid             `json:"id"`
}

// RemoteLogSegmentState is Kafka's RemoteLogSegmentState, with its ids: metadata's
// states (which the image keeps), with Kafka's names in text and JSON.
type RemoteLogSegmentState int8

// The states a remote segment goes through, in order.
const (
	CopySegmentStarted    = RemoteLogSegmentState(metadata.CopySegmentStarted)    // the copy began; the objects may be incomplete
	CopySegmentFinished   = RemoteLogSegmentState(metadata.CopySegmentFinished)   // every object is in the store: readable
	DeleteSegmentStarted  = RemoteLogSegmentState(metadata.DeleteSegmentStarted)  // deletion began; no longer read
	DeleteSegmentFinished = RemoteLogSegmentState(metadata.DeleteSegmentFinished) // every object is gone
)

// String is Kafka's name of the state.
func (s RemoteLogSegmentState) String() string { return metadata.RemoteLogSegmentState(s).String() }

// MarshalText writes Kafka's name of the state.
func (s RemoteLogSegmentState) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, fmt.Errorf("%w: state %d", ErrInvalidMetadata, int8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads Kafka's name of a state.
func (s *RemoteLogSegmentState) UnmarshalText(b []byte) error {
	for st := CopySegmentStarted; st <= DeleteSegmentFinished; st++ {
		if st.String() == string(b) {
			*s = st
			return nil
		}
	}
	return fmt.Errorf("%w: state %q", ErrInvalidMetadata, b)
}

func (s RemoteLogSegmentState) valid() bool { return metadata.RemoteLogSegmentState(s).Valid() }

// CanTransitionTo reports whether a segment in state s may move to next, as Kafka's
// RemoteLogSegmentState.isValidTransition (metadata's rule, which the image enforces).
func (s RemoteLogSegmentState) CanTransitionTo(next RemoteLogSegmentState) bool {
	return metadata.RemoteLogSegmentState(s).CanTransitionTo(metadata.RemoteLogSegmentState(next))
}

// EpochStart is one entry of a segment's leader epochs: the epoch and the first offset
// of the segment written in it.
type EpochStart struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
}

// RemoteLogSegmentMetadata is Kafka's RemoteLogSegmentMetadata: what the cluster knows of
// one segment in remote storage. The remote log manager records it in COPY_SEGMENT_STARTED
// before the copy and again in each later state.
type RemoteLogSegmentMetadata struct {
	SegmentID      RemoteLogSegmentID `json:"remoteLogSegmentId"`
	StartOffset    int64              `json:"startOffset"`    // the segment's base offset
	EndOffset      int64              `json:"endOffset"`      // its last offset, inclusive
	MaxTimestampMs int64              `json:"maxTimestampMs"` // the largest record timestamp in it
	BrokerID       int32              `json:"brokerId"`       // the broker that wrote this state
	// EventTimestampMs is when BrokerID moved the segment to State.
	EventTimestampMs int64 `json:"eventTimestampMs"`
	// SegmentLeaderEpochs are the leader epochs of the segment's batches with the first
	// offset of each, ascending (Kafka's segmentLeaderEpochs map).
	SegmentLeaderEpochs []EpochStart `json:"segmentLeaderEpochs"`
	SegmentSizeInBytes  int32        `json:"segmentSizeInBytes"`
	// CustomMetadata is what the storage returned from the copy for later calls (Kafka's
	// Optional<CustomMetadata>); nil when none.
	CustomMetadata []byte                `json:"customMetadata,omitempty"`
	State          RemoteLogSegmentState `json:"state"`
	// TxnIdxEmpty records that the segment was copied without a transaction index
	// (KIP-1058): a fetch need not ask for it.
	TxnIdxEmpty bool `json:"txnIdxEmpty"`
}

// maxTopicNameLength is Kafka's limit on a topic name.
const maxTopicNameLength = 249

// Validate checks what Kafka's constructors check and the ranges the encoding relies on:
// a topic name, non-negative partition, offsets and size, start ≤ end, a known state,
// and at least one leader epoch, epochs ascending with start offsets ascending inside
// [StartOffset, EndOffset].
func (m *RemoteLogSegmentMetadata) Validate() error {
	tp := m.SegmentID.TopicIDPartition
	switch {
	case tp.Topic == "" || len(tp.Topic) > maxTopicNameLength:
		return fmt.Errorf("%w: topic name of %d bytes", ErrInvalidMetadata, len(tp.Topic))
	case tp.Partition < 0:
		return fmt.Errorf("%w: partition %d", ErrInvalidMetadata, tp.Partition)
	case m.StartOffset < 0 || m.EndOffset < m.StartOffset:
		return fmt.Errorf("%w: offsets [%d, %d]", ErrInvalidMetadata, m.StartOffset, m.EndOffset)
	case m.SegmentSizeInBytes < 0:
		return fmt.Errorf("%w: segment size %d", ErrInvalidMetadata, m.SegmentSizeInBytes)
	case !m.State.valid():
		return fmt.Errorf("%w: state %d", ErrInvalidMetadata, int8(m.State))
	case len(m.SegmentLeaderEpochs) == 0:
		return fmt.Errorf("%w: no leader epochs", ErrInvalidMetadata)
	}
	for i, e := range m.SegmentLeaderEpochs {
		if e.Epoch < 0 || e.StartOffset < m.StartOffset || e.StartOffset > m.EndOffset {
			return fmt.Errorf("%w: leader epoch %d at offset %d outside [%d, %d]", ErrInvalidMetadata, e.Epoch, e.StartOffset, m.StartOffset, m.EndOffset)
		}
		if i > 0 {
			prev := m.SegmentLeaderEpochs[i-1]
			if e.Epoch <= prev.Epoch || e.StartOffset < prev.StartOffset {
				return fmt.Errorf("%w: leader epoch %d at %d after epoch %d at %d", ErrInvalidMetadata, e.Epoch, e.StartOffset, prev.Epoch, prev.StartOffset)
			}
		}
	}
	return nil
}
