package broker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/rpc"
)

// saslAuthenticator is one SASL listener's server side (rpc.SASLAuthenticator):
// auth.SASLServer with SCRAM credentials from the metadata image.
type saslAuthenticator struct{ *auth.SASLServer }

// newSASLAuthenticator reads a SASL listener's enabled mechanisms and PLAIN users.
func (b *Broker) newSASLAuthenticator(listener string) (saslAuthenticator, error) {
	mechs, err := auth.ParseMechanisms(b.cfg.listenerProperty(listener, "sasl.enabled.mechanisms"))
	if err != nil || len(mechs) == 0 {
		why := "it offers none of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
		if err != nil {
			why = err.Error()
		}
		return saslAuthenticator{}, fmt.Errorf("%w: listener %s: sasl.enabled.mechanisms: %s", config.ErrInvalidBrokerConfig, listener, why)
	}
	plainUsers := map[string]string{}
	if slices.Contains(mechs, auth.MechanismPlain) {
		jaas, err := b.cfg.jaasConfig(listener, auth.MechanismPlain)
		if err != nil {
			return saslAuthenticator{}, err
		}
		plainUsers = auth.PlainUsers(jaas)
		if len(plainUsers) == 0 {
			b.logger.Warn("PLAIN is enabled but its JAAS configuration names no user_<name> option: every PLAIN login fails",
				"listener", listener, "property", "listener.name."+strings.ToLower(listener)+".plain.sasl.jaas.config")
		}
	}
	return saslAuthenticator{auth.NewSASLServer(mechs, plainUsers, func(user string, typ int8) (auth.ScramCredential, bool) {
		c, ok := b.Image().ScramCredentialOf(user, typ)
		if !ok {
			return auth.ScramCredential{}, false
		}
		return auth.ScramCredential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
	})}, nil
}

// NewSession implements rpc.SASLAuthenticator.
func (a saslAuthenticator) NewSession(mechanism string, _ *rpc.ConnInfo) (rpc.SASLSession, error) {
	return a.Start(mechanism)
}

// authFailureLimiter delays answers to failed authentications (auth.FailureDelay).
type authFailureLimiter = auth.FailureDelay

func newAuthFailureLimiter(base time.Duration) *authFailureLimiter { return auth.NewFailureDelay(base) }
