package auth

import "errors"

// ErrInvalidACL is an ACL or ACL filter that cannot be stored or compared (Kafka's
// INVALID_REQUEST).
var ErrInvalidACL = errors.New("auth: invalid ACL")

// ErrInvalidQuota is a client quota entity or value Kafka refuses (INVALID_REQUEST).
var ErrInvalidQuota = errors.New("auth: invalid client quota")
