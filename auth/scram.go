package auth

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"fmt"
	"hash"

	"github.com/xdg-go/scram"
)

// Kafka's SCRAM iteration bounds (ScramMechanism.minIterations/maxIterations) and the
// default of kafka-configs.sh.
const (
	ScramMinIterations     = 4096
	ScramMaxIterations     = 16384
	ScramDefaultIterations = 4096
)

// maxScramMessage bounds a SCRAM client message; real ones are under 1 KiB.
const maxScramMessage = 8192

// ScramMechanismType is Kafka's numbering of SCRAM mechanisms in
// DescribeUserScramCredentials and AlterUserScramCredentials (0 is UNKNOWN).
func ScramMechanismType(name string) int8 {
	switch name {
	case MechanismScramSHA256:
		return 1
	case MechanismScramSHA512:
		return 2
	}
	return 0
}

// ScramMechanismName is the inverse of ScramMechanismType; "" for an unknown type.
func ScramMechanismName(t int8) string {
	switch t {
	case 1:
		return MechanismScramSHA256
	case 2:
		return MechanismScramSHA512
	}
	return ""
}

func scramHash(mechanism string) (scram.HashGeneratorFcn, error) {
	switch mechanism {
	case MechanismScramSHA256:
		return scram.SHA256, nil
	case MechanismScramSHA512:
		return scram.SHA512, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedMechanism, mechanism)
}

// ScramCredential is what the server keeps of a SCRAM password (RFC 5802), in the
// shape of Kafka's UserScramCredentialRecord.
type ScramCredential struct {
	Salt       []byte
	Iterations int32
	StoredKey  []byte
	ServerKey  []byte
}

// NewScramCredential salts password for mechanism with a random 32-byte salt (or the
// given salt when non-empty) and derives the stored and server keys.
func NewScramCredential(mechanism, password string, iterations int32, salt []byte) (ScramCredential, error) {
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return ScramCredential{}, fmt.Errorf("%w: iterations %d outside %d-%d", ErrInvalidCredential, iterations, ScramMinIterations, ScramMaxIterations)
	}
	h, err := scramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	if len(salt) == 0 {
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return ScramCredential{}, err
		}
	}
	cl, err := h.NewClient("", password, "")
	if err != nil {
		return ScramCredential{}, fmt.Errorf("%w: %v", ErrInvalidCredential, err)
	}
	sc := cl.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: int(iterations)})
	return ScramCredential{Salt: salt, Iterations: iterations, StoredKey: sc.StoredKey, ServerKey: sc.ServerKey}, nil
}

// ClientSession is the client side of one SASL exchange (inter-broker connections and
// the CLI).
type ClientSession interface {
	// Step takes the server's last answer (nil before the first message) and returns
	// the next client message; done is true when no further message is due.
	Step(challenge []byte) (msg []byte, done bool, err error)
}

// NewClientSession starts a client exchange for mechanism with the given credentials.
func NewClientSession(mechanism, username, password string) (ClientSession, error) {
	if mechanism == MechanismPlain {
		return &plainClient{msg: EncodePlain(username, password)}, nil
	}
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	cl, err := h.NewClient(username, password, "")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidCredential, err)
	}
	return &scramClient{conv: cl.NewConversation()}, nil
}

type plainClient struct {
	msg  []byte
	sent bool
}

func (p *plainClient) Step([]byte) ([]byte, bool, error) {
	if p.sent {
		return nil, true, nil
	}
	p.sent = true
	return p.msg, true, nil
}

type scramClient struct {
	conv  *scram.ClientConversation
	steps int
}

func (s *scramClient) Step(challenge []byte) ([]byte, bool, error) {
	s.steps++
	out, err := s.conv.Step(string(challenge))
	if err != nil {
		return nil, false, fmt.Errorf("%w: %v", ErrAuthenticationFailed, err)
	}
	// The third step validates the server-final message and sends nothing more.
	return []byte(out), s.steps >= 2, nil
}

// Verify checks the server-final message of a SCRAM exchange (the answer to the last
// message); a PLAIN exchange has nothing to verify.
func Verify(sess ClientSession, final []byte) error {
	s, ok := sess.(*scramClient)
	if !ok {
		return nil
	}
	if _, err := s.conv.Step(string(final)); err != nil || !s.conv.Valid() {
		return fmt.Errorf("%w: server signature invalid", ErrAuthenticationFailed)
	}
	return nil
}

// ScramKeysFromSaltedPassword derives the stored key and server key (RFC 5802) from a
// salted password, as AlterUserScramCredentials carries it (the client salts: the
// password never reaches the broker).
func ScramKeysFromSaltedPassword(mechanism string, salted []byte) (storedKey, serverKey []byte, err error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, nil, err
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	return sum.Sum(nil), mac(salted, "Server Key"), nil
}

// SaltPassword is RFC 5802's Hi(password, salt, iterations) for mechanism: what a
// client puts in AlterUserScramCredentials.
func SaltPassword(mechanism, password string, salt []byte, iterations int32) ([]byte, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	return pbkdf2.Key(func() hash.Hash { return h() }, password, salt, int(iterations), h().Size())
}
