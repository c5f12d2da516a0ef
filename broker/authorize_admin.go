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

// configOK checks op on a config resource (auth.Checks.ConfigResource); a group's
// configs are checked on the group, as in Kafka.
func (z authzChecks) configOK(t kmsg.ConfigResourceType, name string, op auth.Operation) bool {
	if t == kmsg.ConfigResourceTypeGroupConfig {
		return z.groupOK(op, name)
	}
	return z.b.checks(z.req).ConfigResource(op, t == kmsg.ConfigResourceTypeTopic, name)
}

func configDeniedCode(t kmsg.ConfigResourceType) int16 {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return codeTopicAuthz
	case kmsg.ConfigResourceTypeGroupConfig:
		return codeGroupAuthz
	}
	return codeClusterAuthz
}
