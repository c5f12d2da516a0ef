package metadata

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Uuid is a 128-bit id (topic ids, incarnation ids), printed as Kafka prints it: 22
// characters of unpadded base64url.
type Uuid [16]byte

// ZeroUuid is the absent id.
var ZeroUuid Uuid

// String is Kafka's base64url form, as used in partition.metadata and by Kafka's tools.
func (u Uuid) String() string { return base64.RawURLEncoding.EncodeToString(u[:]) }

// Hex is the 32-digit hex form.
func (u Uuid) Hex() string { return hex.EncodeToString(u[:]) }

// MarshalText encodes the base64url form.
func (u Uuid) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// UnmarshalText decodes the base64url form.
func (u *Uuid) UnmarshalText(b []byte) error {
	p, err := ParseUuid(string(b))
	if err != nil {
		return err
	}
	*u = p
	return nil
}

// ParseUuid parses Kafka's base64url form.
func ParseUuid(s string) (Uuid, error) {
	var u Uuid
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return u, fmt.Errorf("%w: uuid %q", ErrInvalidRecord, s)
	}
	copy(u[:], b)
	return u, nil
}

// UuidFromBytes makes a version-4 style id from 16 random bytes supplied by the caller
// (this package reads no randomness).
func UuidFromBytes(random [16]byte) Uuid {
	random[6] = random[6]&0x0f | 0x40
	random[8] = random[8]&0x3f | 0x80
	return Uuid(random)
}
