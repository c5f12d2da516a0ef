package broker

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/rpc"
)

// saslAuthenticator is one SASL listener's server side (rpc.SASLAuthenticator): PLAIN
// against the users of the listener's JAAS configuration, SCRAM against the
// credentials in the metadata image.
type saslAuthenticator struct {
	b          *Broker
	mechanisms []string
	// plainUsers are the user_<name>="<password>" options of the PLAIN JAAS config;
	// read-only after start.
	plainUsers map[string]string
}

// newSASLAuthenticator reads a SASL listener's enabled mechanisms and PLAIN users.
func (b *Broker) newSASLAuthenticator(listener string) (*saslAuthenticator, error) {
	mechs, err := auth.ParseMechanisms(b.cfg.listenerProperty(listener, "sasl.enabled.mechanisms"))
	if err != nil || len(mechs) == 0 {
		why := "it offers none of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512"
		if err != nil {
			why = err.Error()
		}
		return nil, fmt.Errorf("%w: listener %s: sasl.enabled.mechanisms: %s", config.ErrInvalidBrokerConfig, listener, why)
	}
	a := &saslAuthenticator{b: b, mechanisms: mechs, plainUsers: map[string]string{}}
	for _, m := range mechs {
		if m != auth.MechanismPlain {
			continue
		}
		jaas, err := b.cfg.jaasConfig(listener, m)
		if err != nil {
			return nil, err
		}
		a.plainUsers = auth.PlainUsers(jaas)
		if len(a.plainUsers) == 0 {
			b.logger.Warn("PLAIN is enabled but its JAAS configuration names no user_<name> option: every PLAIN login fails",
				"listener", listener, "property", "listener.name."+strings.ToLower(listener)+".plain.sasl.jaas.config")
		}
	}
	return a, nil
}

// Mechanisms implements rpc.SASLAuthenticator.
func (a *saslAuthenticator) Mechanisms() []string { return a.mechanisms }

// NewSession implements rpc.SASLAuthenticator.
func (a *saslAuthenticator) NewSession(mechanism string, _ *rpc.ConnInfo) (rpc.SASLSession, error) {
	if mechanism == auth.MechanismPlain {
		return auth.NewPlainServer(func(user string) (string, bool) {
			p, ok := a.plainUsers[user]
			return p, ok
		}), nil
	}
	typ := auth.ScramMechanismType(mechanism)
	return auth.NewScramServer(mechanism, func(user string) (auth.ScramCredential, bool) {
		c, ok := a.b.Image().ScramCredentialOf(user, typ)
		if !ok {
			return auth.ScramCredential{}, false
		}
		return auth.ScramCredential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
	})
}

// authFailureLimiter delays answers to failed authentications
// (connection.failed.authentication.delay.ms), per remote host: failures from one
// address are answered at most once per delay, so a client retrying passwords in a
// loop or over many connections gets one answer per delay. Parallel failures queue up
// without a cap: the i-th waits i delays. What they cost while they wait (a connection
// each, its reader already gone) is bounded by max.connections.per.ip.
type authFailureLimiter struct {
	base time.Duration
	mu   sync.Mutex
	// next is, per remote host, when its next failure may be answered; guarded by mu.
	next map[string]time.Time
}

// maxTrackedHosts bounds the limiter's memory; past it, expired entries are dropped.
const maxTrackedHosts = 10000

func newAuthFailureLimiter(base time.Duration) *authFailureLimiter {
	return &authFailureLimiter{base: base, next: map[string]time.Time{}}
}

// delay returns how long to hold back the failure answer to remote.
func (l *authFailureLimiter) delay(remote net.Addr) time.Duration {
	if l == nil || l.base <= 0 {
		return 0
	}
	host := remote.String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.next) >= maxTrackedHosts {
		for h, t := range l.next {
			if t.Before(now) {
				delete(l.next, h)
			}
		}
	}
	at := now.Add(l.base)
	if n, ok := l.next[host]; ok && n.After(now) {
		at = n.Add(l.base) // one delay after the host's last scheduled answer
	}
	l.next[host] = at
	return at.Sub(now)
}
