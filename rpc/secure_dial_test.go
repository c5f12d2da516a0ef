package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"testing"
)

// TestSecureDialerSASL: a wrapped dial authenticates before the client sees the
// connection (a request then succeeds on the SASL listener); wrong credentials fail
// the dial with the server's error, and a failing TLS configuration fails it before
// any byte is sent.
func TestSecureDialerSASL(t *testing.T) {
	srv := startListener(t, ServerConfig{}, saslRegistry(), ListenerConfig{Name: "SASL_PLAINTEXT", SASL: testPLAIN{}})
	var tcp net.Dialer
	plain := func(password string) SecureDialer {
		return SecureDialer{Mechanism: "PLAIN", NewStep: func() (SASLClientStep, error) {
			return SASLClientStep{Step: func([]byte) ([]byte, bool, error) { return []byte("\x00alice\x00" + password), true, nil }}, nil
		}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cl, err := DialWith(ctx, plain("secret").Wrap(tcp.DialContext, "t"), srv.addr, "t")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := cl.Do(ctx, metadataRequest(9, "after-sasl")); err != nil {
		t.Fatalf("request after SASL: %v", err)
	}
	if _, err := DialWith(ctx, plain("wrong").Wrap(tcp.DialContext, "t"), srv.addr, "t"); err == nil {
		t.Fatal("wrong password: dial succeeded")
	}
	refused := errors.New("no TLS for you")
	d := SecureDialer{TLS: func(string) (*tls.Config, error) { return nil, refused }}
	if _, err := DialWith(ctx, d.Wrap(tcp.DialContext, "t"), srv.addr, "t"); !errors.Is(err, refused) {
		t.Fatalf("TLS configuration error: %v", err)
	}
}
