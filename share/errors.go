package share

import "errors"

// Sentinel errors of the share-partition state machine. The broker's error table maps
// them to Kafka's codes.
var (
	// ErrInvalidRecordState is Kafka's INVALID_RECORD_STATE (121): an acknowledgement
	// names a record that is not acquired, or not acquired by that member
	// (org.apache.kafka.common.errors.InvalidRecordStateException).
	ErrInvalidRecordState = errors.New("share: the record state is invalid")

	// ErrInvalidRequest is Kafka's INVALID_REQUEST (42): an acknowledgement batch is
	// malformed (offsets out of order or overlapping, unknown acknowledge type, a type
	// list that is neither one entry nor one per offset) or names offsets past the
	// in-flight records.
	ErrInvalidRequest = errors.New("share: invalid acknowledgement request")

	// ErrCorruptRecord reports a __share_group_state record that does not parse.
	ErrCorruptRecord = errors.New("share: corrupt __share_group_state record")
)
