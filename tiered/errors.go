package tiered

import (
	"errors"
	"fmt"
)

// ErrRemoteStorage is Kafka's RemoteStorageException: an operation on the object store
// failed (unreachable, refused credentials, a missing bucket, a timeout). Every error of
// this package's storage calls matches it with errors.Is.
var ErrRemoteStorage = errors.New("remote storage error")

// ErrRemoteResourceNotFound is Kafka's RemoteResourceNotFoundException: the object asked
// for does not exist (a segment never copied or already deleted, a segment copied without
// a transaction index). It is a kind of ErrRemoteStorage.
var ErrRemoteResourceNotFound = errors.New("remote resource not found")

// ErrInvalidMetadata is returned by the metadata decoders for bytes that are not an
// encoded RemoteLogSegmentMetadata, and by Validate for impossible field values.
var ErrInvalidMetadata = errors.New("invalid remote log segment metadata")

// StorageError is the error of one object store call: which operation, on which object
// key, the store's error code when it answered one (NoSuchBucket, AccessDenied,
// InvalidAccessKeyId, ...), and the cause. It matches ErrRemoteStorage, and
// ErrRemoteResourceNotFound when the object does not exist; errors.Is also reaches the
// cause (context.DeadlineExceeded for a call that timed out).
type StorageError struct {
	Op       string // the RemoteStorageManager method
	Key      string // the object key
	Code     string // the store's error code; "" when it did not answer one
	NotFound bool   // the object does not exist
	Err      error
}

func (e *StorageError) Error() string {
	code := ""
	if e.Code != "" {
		code = " (" + e.Code + ")"
	}
	return fmt.Sprintf("%s %s%s: %v", e.Op, e.Key, code, e.Err)
}

// Unwrap returns the cause.
func (e *StorageError) Unwrap() error { return e.Err }

// Is reports ErrRemoteStorage always and ErrRemoteResourceNotFound for a missing object.
func (e *StorageError) Is(target error) bool {
	return target == ErrRemoteStorage || (e.NotFound && target == ErrRemoteResourceNotFound)
}
