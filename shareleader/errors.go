package shareleader

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/share"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Sentinel errors of the share-partition manager; ErrorCode maps them, and share's, to
// Kafka's codes (as group/ and txn/ map theirs: the broker's table is for the others).
var (
	// ErrShareSessionNotFound is SHARE_SESSION_NOT_FOUND (122): a request with a
	// session epoch above 0 for a (group, member) with no share session here.
	ErrShareSessionNotFound = errors.New("shareleader: share session not found")
	// ErrInvalidShareSessionEpoch is INVALID_SHARE_SESSION_EPOCH (123): the epoch is
	// not the session's next one, or a ShareAcknowledge tries to open a session.
	ErrInvalidShareSessionEpoch = errors.New("shareleader: invalid share session epoch")
	// ErrShareSessionLimitReached is SHARE_SESSION_LIMIT_REACHED (133): the broker
	// holds group.share.max.share.sessions sessions already.
	ErrShareSessionLimitReached = errors.New("shareleader: share session limit reached")
	// ErrInvalidRequest is INVALID_REQUEST (42): a request Kafka refuses as malformed
	// (fetch parameters on a RENEW acknowledgement, partitions in a closing fetch).
	ErrInvalidRequest = errors.New("shareleader: invalid request")
	// ErrStateWrite is a WriteShareGroupState or ReadShareGroupState that failed; it
	// wraps the share coordinator's code (codeError) and the share partition is
	// dropped so that the next fetch reloads the durable state.
	ErrStateWrite = errors.New("shareleader: share state not persisted")
	// ErrNotLeader is NOT_LEADER_OR_FOLLOWER (6): the replica stopped leading while
	// the share partition was in use.
	ErrNotLeader = errors.New("shareleader: not the partition leader")
	// ErrClosed is the manager stopped (broker shutdown): NOT_LEADER_OR_FOLLOWER.
	ErrClosed = errors.New("shareleader: share-partition manager closed")
	// errLoading is a share partition still loading when the fetch's MaxWait
	// passed: it answers no records, as Kafka's DelayedShareFetch does.
	errLoading = errors.New("shareleader: share partition still loading")
)

// codeError carries a Kafka code answered as it is: the broker's for a partition it
// does not lead, an authorization failure.
type codeError struct {
	code int16
	what string
}

func (e *codeError) Error() string {
	if ke := kerr.ErrorForCode(e.code); ke != nil {
		return e.what + ": " + ke.Error()
	}
	return e.what
}

// stateError is a share coordinator's code for one share partition (Read or
// WriteShareGroupState); a client sees it through persisterCodes.
type stateError struct{ codeError }

// persisterCodes is Kafka 4.2's SharePartition.fetchPersisterError: what a ShareFetch
// or ShareAcknowledge partition answers for a share coordinator's code. A
// coordinator moving or loading is COORDINATOR_NOT_AVAILABLE, a leader fenced
// NOT_LEADER_OR_FOLLOWER; a code not listed is UNKNOWN_SERVER_ERROR.
var persisterCodes = map[int16]int16{
	kerr.NotCoordinator.Code:            kerr.CoordinatorNotAvailable.Code,
	kerr.CoordinatorNotAvailable.Code:   kerr.CoordinatorNotAvailable.Code,
	kerr.CoordinatorLoadInProgress.Code: kerr.CoordinatorNotAvailable.Code,
	kerr.GroupIDNotFound.Code:           kerr.GroupIDNotFound.Code,
	kerr.UnknownTopicOrPartition.Code:   kerr.UnknownTopicOrPartition.Code,
	kerr.FencedStateEpoch.Code:          kerr.FencedStateEpoch.Code,
	kerr.FencedLeaderEpoch.Code:         kerr.NotLeaderForPartition.Code,
}

// ErrorCode is err's Kafka code: 0 for nil; a share coordinator's code mapped as Kafka
// maps it (persisterCodes); a failed share state call COORDINATOR_NOT_AVAILABLE, its
// deadline included; UNKNOWN_SERVER_ERROR (-1) for anything else.
//
// shareleader keeps this table of its own (DESIGN.md, Contributing): a ShareFetch
// answers per partition codes that are built here.
func ErrorCode(err error) int16 {
	var ce *codeError
	var se *stateError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &se):
		if code, ok := persisterCodes[se.code]; ok {
			return code
		}
		return kerr.UnknownServerError.Code
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, ErrShareSessionNotFound):
		return kerr.ShareSessionNotFound.Code
	case errors.Is(err, ErrInvalidShareSessionEpoch):
		return kerr.InvalidShareSessionEpoch.Code
	case errors.Is(err, ErrShareSessionLimitReached):
		return kerr.ShareSessionLimitReached.Code
	case errors.Is(err, ErrInvalidRequest), errors.Is(err, share.ErrInvalidRequest):
		return kerr.InvalidRequest.Code
	case errors.Is(err, share.ErrInvalidRecordState):
		return kerr.InvalidRecordState.Code
	case errors.Is(err, ErrNotLeader), errors.Is(err, ErrClosed), errors.Is(err, replication.ErrNotLeader),
		errors.Is(err, replication.ErrPartitionStopped), errors.Is(err, replication.ErrFencedLeaderEpoch):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replication.ErrOffsetNotAvailable):
		return kerr.OffsetNotAvailable.Code
	case errors.Is(err, ErrStateWrite):
		// Before the context errors: a share state call that timed out is the
		// share coordinator unavailable, not the request timing out.
		return kerr.CoordinatorNotAvailable.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// code is ErrorCode logging the errors it does not know at Error, as the broker's
// table does.
func (m *Manager) code(err error) int16 {
	c := ErrorCode(err)
	if c == kerr.UnknownServerError.Code {
		m.log.Error("unexpected share partition error", "error", err)
	}
	return c
}

// stateLogLevel is the level a failed share state call is logged at: Debug when it is
// routine (a leader fenced after leadership moved, the manager closing), Info when the
// share coordinator is moving or unreachable (it recovers on its own), Warn for
// anything else.
func stateLogLevel(err error) hclog.Level {
	var se *stateError
	if errors.As(err, &se) {
		switch se.code {
		case kerr.FencedLeaderEpoch.Code, kerr.FencedStateEpoch.Code:
			return hclog.Debug
		case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
			return hclog.Info
		}
		return hclog.Warn
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, ErrClosed), errors.Is(err, ErrNotLeader):
		return hclog.Debug
	case errors.Is(err, context.DeadlineExceeded):
		return hclog.Info
	}
	return hclog.Warn
}
