package broker

// Helpers of the admin APIs' rules (each rule is in its API's file): the config
// resources' checks, and the error of an API without a rule.

import (
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errNoAuthorizationRule closes the connection of a request whose API has no rule.
var errNoAuthorizationRule = fmt.Errorf("%w: the api has no authorization rule", ErrClusterAuthorizationFailed)

// configOK checks op on a config resource (auth.Checks.ConfigResource).
func (z authzChecks) configOK(t kmsg.ConfigResourceType, name string, op auth.Operation) bool {
	return z.b.checks(z.req).ConfigResource(op, t == kmsg.ConfigResourceTypeTopic, name)
}

func configDeniedCode(t kmsg.ConfigResourceType) int16 {
	if t == kmsg.ConfigResourceTypeTopic {
		return codeTopicAuthz
	}
	return codeClusterAuthz
}
