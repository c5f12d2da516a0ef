package coordinator

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Errors of Submit. ErrorCode (router.go) and the broker's error table map them to
// Kafka codes.
var (
	// ErrNotCoordinator means the partition is not loaded here: this broker does not
	// lead it, or it was unloaded before the op ran.
	ErrNotCoordinator = errors.New("coordinator: this broker is not the coordinator of the partition")
	// ErrLoadInProgress means the partition is being loaded.
	ErrLoadInProgress = errors.New("coordinator: the partition is being loaded")
	// ErrClosed means the runtime was closed.
	ErrClosed = errors.New("coordinator: runtime closed")
)

// errTooManyTimedOut refuses a write while Config.MaxTimedOutWrites timed-out writes
// wait for the high watermark (COORDINATOR_NOT_AVAILABLE, nothing appended).
var errTooManyTimedOut = errors.New("coordinator: too many timed-out writes wait for the high watermark")

// The Kafka codes the runtime's writes complete with.
var (
	codeNotCoordinator          = kerr.NotCoordinator.Code
	codeCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	codeUnknownServerError      = kerr.UnknownServerError.Code
	// A transactional write or marker refused by the partition's producer state.
	codeInvalidProducerEpoch         = kerr.InvalidProducerEpoch.Code
	codeInvalidTxnState              = kerr.InvalidTxnState.Code
	codeTransactionCoordinatorFenced = kerr.TransactionCoordinatorFenced.Code
)
