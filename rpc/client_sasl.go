package rpc

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASLClientStep is the client side of a SASL exchange: given the server's last
// answer (nil at first) it returns the next message, and done once no further message
// is due. Verify, when set, checks the server's answer to the last message.
type SASLClientStep struct {
	Step   func(challenge []byte) (msg []byte, done bool, err error)
	Verify func(final []byte) error
}

// maxSASLResponse bounds a response read during authentication.
const maxSASLResponse = 1 << 20

// AuthenticateSASL runs SaslHandshake v1 and SaslAuthenticate v1 rounds for mechanism
// on a fresh connection nc, before it is handed to NewClientConn, and returns the
// session lifetime the server announced (0: none). ctx bounds the exchange.
func AuthenticateSASL(ctx context.Context, nc net.Conn, clientID, mechanism string, sess SASLClientStep) (time.Duration, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
		defer nc.SetDeadline(time.Time{})
	}
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
	var corr int32
	roundTrip := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		if _, err := nc.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return nil, fmt.Errorf("rpc: SASL %s: %w", kmsg.NameForKey(req.Key()), err)
		}
		var size [4]byte
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			return nil, fmt.Errorf("rpc: SASL %s: reading response: %w", kmsg.NameForKey(req.Key()), err)
		}
		n := int32(binary.BigEndian.Uint32(size[:]))
		if n < 4 || n > maxSASLResponse {
			return nil, fmt.Errorf("%w: SASL response of %d bytes", ErrMalformedResponse, n)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(nc, frame); err != nil {
			return nil, fmt.Errorf("rpc: SASL %s: reading response: %w", kmsg.NameForKey(req.Key()), err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
			return nil, fmt.Errorf("%w: got %d, expected %d", ErrCorrelationMismatch, got, corr)
		}
		return decodeResponse(req, frame[4:])
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version = 1
	hs.Mechanism = mechanism
	resp, err := roundTrip(hs)
	if err != nil {
		return 0, err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return 0, fmt.Errorf("rpc: SaslHandshake %s: %w", mechanism, kerr.ErrorForCode(code))
	}
	var challenge []byte
	var lifetime time.Duration
	for round := 0; round < 8; round++ {
		msg, done, err := sess.Step(challenge)
		if err != nil {
			return 0, err
		}
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version = 1
		req.SASLAuthBytes = msg
		resp, err := roundTrip(req)
		if err != nil {
			return 0, err
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != 0 {
			detail := ""
			if r.ErrorMessage != nil {
				detail = ": " + *r.ErrorMessage
			}
			return 0, fmt.Errorf("rpc: SaslAuthenticate %s: %w%s", mechanism, kerr.ErrorForCode(r.ErrorCode), detail)
		}
		lifetime = time.Duration(r.SessionLifetimeMillis) * time.Millisecond
		challenge = r.SASLAuthBytes
		if done {
			if sess.Verify != nil {
				if err := sess.Verify(challenge); err != nil {
					return 0, err
				}
			}
			return lifetime, nil
		}
	}
	return 0, fmt.Errorf("rpc: SASL %s did not finish", mechanism)
}
