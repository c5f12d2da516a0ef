package auth

// SASLServer is one SASL listener's server side: PLAIN against the users of the
// listener's JAAS configuration, SCRAM against the credentials a lookup returns (the
// metadata image's). Safe for concurrent use; read-only after NewSASLServer.
type SASLServer struct {
	mechanisms []string
	plainUsers map[string]string
	scram      func(user string, mechanismType int8) (ScramCredential, bool)
}

// NewSASLServer returns the server of the enabled mechanisms (ParseMechanisms):
// plainUsers are PLAIN's user → password (PlainUsers of its JAAS configuration), scram
// looks up a user's credential of a SCRAM mechanism type (ScramMechanismType).
func NewSASLServer(mechanisms []string, plainUsers map[string]string, scram func(user string, mechanismType int8) (ScramCredential, bool)) *SASLServer {
	return &SASLServer{mechanisms: mechanisms, plainUsers: plainUsers, scram: scram}
}

// Mechanisms are the enabled mechanisms, as SaslHandshake lists them.
func (a *SASLServer) Mechanisms() []string { return a.mechanisms }

// Start begins one exchange of an enabled mechanism.
func (a *SASLServer) Start(mechanism string) (ServerSession, error) {
	if mechanism == MechanismPlain {
		return NewPlainServer(func(user string) (string, bool) {
			p, ok := a.plainUsers[user]
			return p, ok
		}), nil
	}
	typ := ScramMechanismType(mechanism)
	return NewScramServer(mechanism, func(user string) (ScramCredential, bool) { return a.scram(user, typ) })
}
