package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// ScramServer is the server side of a SCRAM-SHA-256/512 exchange (RFC 5802) with
// Kafka's rules (ScramSaslServer): client-first → server-first, client-final →
// server-final. Channel binding is refused (Kafka has none). As in Kafka, the
// client-final nonce must end with the server-first nonce rather than equal it:
// librdkafka sends its own nonce in front of the combined one. The client library
// xdg-go/scram checks exactly RFC 5802's equality, so the server side is written here.
type ScramServer struct {
	hash   func() hash.Hash
	lookup func(user string) (ScramCredential, bool)
	state  int // 0 awaiting client-first, 1 awaiting client-final, 2 done

	username    string
	cred        ScramCredential
	gs2Header   string // "n,," or "y,," with an authzid
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // the combined nonce of server-first
}

// NewScramServer starts a SCRAM exchange for mechanism, finding credentials with
// lookup (ok false for an unknown user).
func NewScramServer(mechanism string, lookup func(user string) (ScramCredential, bool)) (*ScramServer, error) {
	h, err := scramHash(mechanism)
	if err != nil {
		return nil, err
	}
	return &ScramServer{hash: func() hash.Hash { return h() }, lookup: lookup}, nil
}

// ClientFirst is a parsed SCRAM client-first message.
type ClientFirst struct {
	GS2Header       string // "n,," / "y,," plus any a=authzid
	AuthorizationID string
	Username        string // decoded (=2C → ',', =3D → '=')
	Nonce           string
	Bare            string // client-first-message-bare
}

// ParseClientFirst parses `gs2-header n=user,r=nonce[,extensions]`.
func ParseClientFirst(msg string) (ClientFirst, error) {
	var cf ClientFirst
	bad := func(why string) error { return fmt.Errorf("%w: SCRAM client-first: %s", ErrMalformedMessage, why) }
	flag, rest, ok := strings.Cut(msg, ",")
	if !ok {
		return cf, bad("no GS2 header")
	}
	switch {
	case flag == "n" || flag == "y":
	case strings.HasPrefix(flag, "p="):
		return cf, bad("channel binding is not supported")
	default:
		return cf, bad("bad GS2 flag")
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, bad("GS2 header not ended")
	}
	if authz != "" {
		a, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return cf, bad("bad authzid")
		}
		if cf.AuthorizationID, ok = decodeSaslName(a); !ok {
			return cf, bad("bad authzid encoding")
		}
	}
	cf.GS2Header, cf.Bare = flag+","+authz+",", bare
	fields := strings.Split(bare, ",")
	if len(fields) < 2 || strings.HasPrefix(fields[0], "m=") {
		return cf, bad("expected n=user,r=nonce")
	}
	u, ok := strings.CutPrefix(fields[0], "n=")
	if !ok || u == "" {
		return cf, bad("no username")
	}
	if cf.Username, ok = decodeSaslName(u); !ok {
		return cf, bad("bad username encoding")
	}
	if cf.Nonce, ok = strings.CutPrefix(fields[1], "r="); !ok || cf.Nonce == "" {
		return cf, bad("no nonce")
	}
	if cf.AuthorizationID != "" && cf.AuthorizationID != cf.Username {
		return cf, fmt.Errorf("%w: authorization id %q differs from the username", ErrAuthenticationFailed, cf.AuthorizationID)
	}
	return cf, nil
}

// ClientFinal is a parsed SCRAM client-final message.
type ClientFinal struct {
	ChannelBinding []byte // decoded c=
	Nonce          string
	Proof          []byte
	WithoutProof   string // client-final-message-without-proof
}

// ParseClientFinal parses `c=...,r=...[,extensions],p=...`.
func ParseClientFinal(msg string) (ClientFinal, error) {
	var cf ClientFinal
	bad := func(why string) error { return fmt.Errorf("%w: SCRAM client-final: %s", ErrMalformedMessage, why) }
	i := strings.LastIndex(msg, ",p=")
	if i < 0 {
		return cf, bad("no proof")
	}
	cf.WithoutProof = msg[:i]
	proof, err := base64.StdEncoding.DecodeString(msg[i+3:])
	if err != nil || len(proof) == 0 {
		return cf, bad("bad proof encoding")
	}
	cf.Proof = proof
	fields := strings.Split(cf.WithoutProof, ",")
	if len(fields) < 2 {
		return cf, bad("expected c=...,r=...")
	}
	c, ok := strings.CutPrefix(fields[0], "c=")
	if !ok {
		return cf, bad("no channel binding attribute")
	}
	if cf.ChannelBinding, err = base64.StdEncoding.DecodeString(c); err != nil {
		return cf, bad("bad channel binding encoding")
	}
	if cf.Nonce, ok = strings.CutPrefix(fields[1], "r="); !ok || cf.Nonce == "" {
		return cf, bad("no nonce")
	}
	return cf, nil
}

// decodeSaslName undoes RFC 5802's =2C and =3D escapes.
func decodeSaslName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',':
			return "", false
		case '=':
			if i+2 >= len(s) {
				return "", false
			}
			switch s[i+1 : i+3] {
			case "2C":
				b.WriteByte(',')
			case "3D":
				b.WriteByte('=')
			default:
				return "", false
			}
			i += 2
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), true
}

// Step implements ServerSession.
func (s *ScramServer) Step(msg []byte) ([]byte, bool, error) {
	if len(msg) > maxScramMessage {
		return nil, false, fmt.Errorf("%w: SCRAM message of %d bytes", ErrMalformedMessage, len(msg))
	}
	switch s.state {
	case 0:
		s.state = 2 // until the step succeeds
		cf, err := ParseClientFirst(string(msg))
		if err != nil {
			return nil, false, err
		}
		cred, ok := s.lookup(cf.Username)
		if !ok {
			return nil, false, fmt.Errorf("%w: unknown user", ErrAuthenticationFailed)
		}
		var raw [18]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, false, err
		}
		s.username, s.cred, s.gs2Header, s.clientFirst = cf.Username, cred, cf.GS2Header, cf.Bare
		s.nonce = cf.Nonce + base64.RawURLEncoding.EncodeToString(raw[:])
		s.serverFirst = "r=" + s.nonce + ",s=" + base64.StdEncoding.EncodeToString(cred.Salt) + ",i=" + strconv.Itoa(int(cred.Iterations))
		s.state = 1
		return []byte(s.serverFirst), false, nil
	case 1:
		s.state = 2
		cf, err := ParseClientFinal(string(msg))
		if err != nil {
			return nil, false, err
		}
		if string(cf.ChannelBinding) != s.gs2Header {
			return nil, false, fmt.Errorf("%w: SCRAM channel binding does not match the GS2 header", ErrMalformedMessage)
		}
		if !strings.HasSuffix(cf.Nonce, s.nonce) {
			return nil, false, fmt.Errorf("%w: invalid client nonce in the final client message", ErrAuthenticationFailed)
		}
		authMessage := s.clientFirst + "," + s.serverFirst + "," + cf.WithoutProof
		signature := s.hmac(s.cred.StoredKey, authMessage)
		if len(cf.Proof) != len(signature) {
			return nil, false, fmt.Errorf("%w: invalid credentials", ErrAuthenticationFailed)
		}
		clientKey := make([]byte, len(signature))
		for i := range signature {
			clientKey[i] = cf.Proof[i] ^ signature[i]
		}
		h := s.hash()
		h.Write(clientKey)
		if subtle.ConstantTimeCompare(h.Sum(nil), s.cred.StoredKey) != 1 {
			return nil, false, fmt.Errorf("%w: invalid credentials", ErrAuthenticationFailed)
		}
		return []byte("v=" + base64.StdEncoding.EncodeToString(s.hmac(s.cred.ServerKey, authMessage))), true, nil
	}
	return nil, false, fmt.Errorf("%w: SCRAM exchange already complete", ErrMalformedMessage)
}

func (s *ScramServer) hmac(key []byte, msg string) []byte {
	m := hmac.New(s.hash, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}

// Username implements ServerSession.
func (s *ScramServer) Username() string { return s.username }
