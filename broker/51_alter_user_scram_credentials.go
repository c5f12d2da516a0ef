package broker

// AlterUserScramCredentials (key 51), v0 (KIP-554). Upsertions carry the salted
// password (the client salts it); the controller derives the stored and server keys and
// writes UserScramCredentialRecord, deletions RemoveUserScramCredentialRecord, each user
// in its own entry. Kafka's per-user errors: an empty name or iterations outside
// 4096-16384 is UNACCEPTABLE_CREDENTIAL, an unknown mechanism UNSUPPORTED_SASL_MECHANISM,
// a user named twice DUPLICATE_RESOURCE, deleting a credential that does not exist
// RESOURCE_NOT_FOUND. Forwarded to the controller.

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AlterUserSCRAMCredentials, 0, 0, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpAlter),
		controller: onController((*Broker).alterUserScramCredentials),
		fillError:  fillErrorAlterUserSCRAMCredentials,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.AlterUserSCRAMCredentialsResponse).Results, func(r kmsg.AlterUserSCRAMCredentialsResponseResult) int16 { return r.ErrorCode })
		},
		adminChange: true,
	})
}

// scramAlteration is one user's changes.
type scramAlteration struct {
	records []metadata.Record
	code    int16
	message string
}

// alterUserScramCredentials runs on the controller.
func (b *Broker) alterUserScramCredentials(ctx context.Context, r *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	users := map[string]*scramAlteration{}
	var order []string
	seen := map[[2]string]bool{}
	get := func(name string) *scramAlteration {
		if a, ok := users[name]; ok {
			return a
		}
		a := &scramAlteration{}
		users[name] = a
		order = append(order, name)
		return a
	}
	fail := func(a *scramAlteration, code int16, msg string) {
		if a.code == 0 {
			a.code, a.message = code, msg
		}
	}
	check := func(a *scramAlteration, name string, mech int8) bool {
		if name == "" {
			fail(a, kerr.UnacceptableCredential.Code, "Username must not be empty")
			return false
		}
		mechName := auth.ScramMechanismName(mech)
		if mechName == "" {
			fail(a, kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism")
			return false
		}
		key := [2]string{name, mechName}
		if seen[key] {
			fail(a, kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request")
			return false
		}
		seen[key] = true
		return true
	}
	for _, d := range r.Deletions {
		a := get(d.Name)
		if check(a, d.Name, d.Mechanism) {
			a.records = append(a.records, metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		}
	}
	for _, u := range r.Upsertions {
		a := get(u.Name)
		if !check(a, u.Name, u.Mechanism) {
			continue
		}
		switch {
		case u.Iterations < auth.ScramMinIterations:
			fail(a, kerr.UnacceptableCredential.Code, fmt.Sprintf("Too few iterations: %d (minimum %d)", u.Iterations, auth.ScramMinIterations))
			continue
		case u.Iterations > auth.ScramMaxIterations:
			fail(a, kerr.UnacceptableCredential.Code, fmt.Sprintf("Too many iterations: %d (maximum %d)", u.Iterations, auth.ScramMaxIterations))
			continue
		case len(u.Salt) == 0 || len(u.SaltedPassword) == 0:
			fail(a, kerr.UnacceptableCredential.Code, "Salt and salted password must not be empty")
			continue
		}
		stored, server, err := auth.ScramKeysFromSaltedPassword(auth.ScramMechanismName(u.Mechanism), u.SaltedPassword)
		if err != nil {
			fail(a, errorCode(err), err.Error())
			continue
		}
		a.records = append(a.records, metadata.UserScramCredentialRecord{Name: u.Name, Mechanism: u.Mechanism,
			Salt: u.Salt, StoredKey: stored, ServerKey: server, Iterations: u.Iterations})
	}
	for _, name := range order {
		a := users[name]
		if a.code == 0 {
			cctx, cancel := b.waitTimeout(ctx, defaultAdminTimeout)
			_, err := b.ctrl.Do(cctx, func(*metadata.Image) ([]metadata.Record, error) { return a.records, nil })
			cancel()
			if err != nil {
				a.code, a.message = b.errorCodeLogged(err, "alter user scram credentials"), err.Error()
			}
		}
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User, rr.ErrorCode = name, a.code
		if a.code != 0 {
			msg := a.message
			rr.ErrorMessage = &msg
		}
		resp.Results = append(resp.Results, rr)
	}
	return resp
}

// scramUserNames are the users a request names, once each in order.
func scramUserNames(r *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, d := range r.Deletions {
		add(d.Name)
	}
	for _, u := range r.Upsertions {
		add(u.Name)
	}
	return out
}

// fillErrorAlterUserSCRAMCredentials is AlterUserSCRAMCredentials's apiOpts.fillError.
func fillErrorAlterUserSCRAMCredentials(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
	ar := req.(*kmsg.AlterUserSCRAMCredentialsRequest)
	for _, u := range scramUserNames(ar) {
		rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		rr.User, rr.ErrorCode, rr.ErrorMessage = u, code, errorMessage(cause)
		r.Results = append(r.Results, rr)
	}
}
