package metadata

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// UserScramCredentialRecord sets one user's SCRAM credential for one mechanism
// (KIP-554; KRaft's UserScramCredentialRecord, type 11): the salted password, never the
// password itself.
type UserScramCredentialRecord struct {
	Name       string `json:"name"`
	Mechanism  int8   `json:"mechanism"` // 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// RemoveUserScramCredentialRecord deletes one user's credential for one mechanism
// (KRaft's RemoveUserScramCredentialRecord, type 22).
type RemoveUserScramCredentialRecord struct {
	Name      string `json:"name"`
	Mechanism int8   `json:"mechanism"`
}

// Type implements Record.
func (UserScramCredentialRecord) Type() RecordType { return UserScramCredentialRecordType }

// Type implements Record.
func (RemoveUserScramCredentialRecord) Type() RecordType {
	return RemoveUserScramCredentialRecordType
}

// Version implements Record.
func (UserScramCredentialRecord) Version() uint16 { return 0 }

// Version implements Record.
func (RemoveUserScramCredentialRecord) Version() uint16 { return 0 }

// ScramCredential is one stored SCRAM credential of the image.
type ScramCredential struct {
	Salt       []byte `json:"salt"`
	StoredKey  []byte `json:"storedKey"`
	ServerKey  []byte `json:"serverKey"`
	Iterations int32  `json:"iterations"`
}

// ErrUnknownScramCredential means a SCRAM credential to delete does not exist.
var ErrUnknownScramCredential = errors.New("metadata: unknown SCRAM credential")

// validScramMechanism reports Kafka's SCRAM mechanism types (ScramMechanism).
func validScramMechanism(m int8) bool { return m == 1 || m == 2 }

// ScramCredentialOf returns user's credential for mechanism (1 SCRAM-SHA-256, 2
// SCRAM-SHA-512).
func (im *Image) ScramCredentialOf(user string, mechanism int8) (ScramCredential, bool) {
	c, ok := im.ScramCredentials[user][mechanism]
	return c, ok
}

// ScramUsers returns the users with at least one SCRAM credential, sorted.
func (im *Image) ScramUsers() []string {
	return slices.Sorted(maps.Keys(im.ScramCredentials))
}

// applyScram applies a SCRAM credential record. Removing a credential that does not
// exist is refused, as Kafka's controller refuses it (RESOURCE_NOT_FOUND).
func (im *Image) applyScram(r Record) error {
	switch r := r.(type) {
	case UserScramCredentialRecord:
		if r.Name == "" || !validScramMechanism(r.Mechanism) || len(r.Salt) == 0 || len(r.StoredKey) == 0 || len(r.ServerKey) == 0 || r.Iterations <= 0 {
			return fmt.Errorf("%w: SCRAM credential of %q is incomplete", ErrInvalidRecord, r.Name)
		}
		im.ScramCredentials = maps.Clone(im.ScramCredentials)
		if im.ScramCredentials == nil {
			im.ScramCredentials = map[string]map[int8]ScramCredential{}
		}
		user := maps.Clone(im.ScramCredentials[r.Name])
		if user == nil {
			user = map[int8]ScramCredential{}
		}
		user[r.Mechanism] = ScramCredential{Salt: r.Salt, StoredKey: r.StoredKey, ServerKey: r.ServerKey, Iterations: r.Iterations}
		im.ScramCredentials[r.Name] = user
	case RemoveUserScramCredentialRecord:
		if _, ok := im.ScramCredentials[r.Name][r.Mechanism]; !ok {
			return fmt.Errorf("%w: user %q has no SCRAM credential of mechanism %d", ErrUnknownScramCredential, r.Name, r.Mechanism)
		}
		im.ScramCredentials = maps.Clone(im.ScramCredentials)
		user := maps.Clone(im.ScramCredentials[r.Name])
		delete(user, r.Mechanism)
		if len(user) == 0 {
			delete(im.ScramCredentials, r.Name)
		} else {
			im.ScramCredentials[r.Name] = user
		}
	}
	return nil
}
