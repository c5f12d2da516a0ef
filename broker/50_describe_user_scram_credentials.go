package broker

// DescribeUserScramCredentials (key 50), v0 (KIP-554): each user's SCRAM mechanisms and
// iteration counts, never the keys. A null or empty user list describes every user
// with a credential; a named user without one is RESOURCE_NOT_FOUND, a user named
// twice DUPLICATE_RESOURCE. Answered from the local metadata image.

import (
	"context"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeUserSCRAMCredentials, 0, 0, (*Broker).handleDescribeUserScramCredentials, apiOpts{
		authorize: clusterOnly(auth.OpDescribe),
		fillError: fillErrorDescribeUserSCRAMCredentials,
	})
}

func (b *Broker) handleDescribeUserScramCredentials(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	im := b.Image()
	var names []string
	count := map[string]int{}
	if len(r.Users) == 0 {
		names = im.ScramUsers()
	} else {
		for _, u := range r.Users {
			if count[u.Name] == 0 {
				names = append(names, u.Name)
			}
			count[u.Name]++
		}
	}
	for _, name := range names {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = name
		creds := im.ScramCredentials[name]
		switch {
		case count[name] > 1:
			res.ErrorCode = kerr.DuplicateResource.Code
			res.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + name)
		case len(creds) == 0:
			res.ErrorCode = kerr.ResourceNotFound.Code
			res.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + name)
		default:
			for _, mech := range []int8{1, 2} {
				if c, ok := creds[mech]; ok {
					ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
					ci.Mechanism, ci.Iterations = mech, c.Iterations
					res.CredentialInfos = append(res.CredentialInfos, ci)
				}
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return rpc.Respond(resp)
}

// fillErrorDescribeUserSCRAMCredentials is DescribeUserSCRAMCredentials's apiOpts.fillError.
func fillErrorDescribeUserSCRAMCredentials(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	out := resp.(*kmsg.DescribeUserSCRAMCredentialsResponse)
	out.ErrorCode, out.ErrorMessage = code, errorMessage(cause)
}
