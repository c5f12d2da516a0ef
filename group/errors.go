package group

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ErrCorruptRecord is a __consumer_offsets record this build cannot decode (a known key
// type whose bytes do not parse). Replay returns it wrapped with the detail; the runtime
// logs the record and skips it.
var ErrCorruptRecord = errors.New("group: corrupt __consumer_offsets record")

// Kafka error codes the state machine answers with.
var (
	errCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	errNotCoordinator          = kerr.NotCoordinator.Code
	errIllegalGeneration       = kerr.IllegalGeneration.Code
	errInconsistentProtocol    = kerr.InconsistentGroupProtocol.Code
	errInvalidGroupID          = kerr.InvalidGroupID.Code
	errUnknownMemberID         = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout   = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress     = kerr.RebalanceInProgress.Code
	errOffsetMetadataTooLarge  = kerr.OffsetMetadataTooLarge.Code
	errNonEmptyGroup           = kerr.NonEmptyGroup.Code
	errGroupIDNotFound         = kerr.GroupIDNotFound.Code
	errGroupSubscribedToTopic  = kerr.GroupSubscribedToTopic.Code
	errMemberIDRequired        = kerr.MemberIDRequired.Code
	errFencedInstanceID        = kerr.FencedInstanceID.Code
	errGroupMaxSizeReached     = kerr.GroupMaxSizeReached.Code
	errUnstableOffsetCommit    = kerr.UnstableOffsetCommit.Code
	errInvalidRequest          = kerr.InvalidRequest.Code
	errStaleMemberEpoch        = kerr.StaleMemberEpoch.Code
	errUnsupportedVersion      = kerr.UnsupportedVersion.Code
)
