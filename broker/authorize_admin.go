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

// opCheck checks an operation on a named resource of one type.
type opCheck func(op auth.Operation, name string) bool

// configResourceOK checks op on a config resource: a topic, or a broker (and broker
// loggers) through the cluster resource.
func configResourceOK(t kmsg.ConfigResourceType, name string, op auth.Operation, topicOK opCheck, clusterOK func(auth.Operation) bool) bool {
	if t == kmsg.ConfigResourceTypeTopic {
		return topicOK(op, name)
	}
	return clusterOK(op)
}

func configDeniedCode(t kmsg.ConfigResourceType) int16 {
	if t == kmsg.ConfigResourceTypeTopic {
		return codeTopicAuthz
	}
	return codeClusterAuthz
}
