package rpc

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestKinds are the request types kmsg does not know, by key (RegisterRequestKind).
// Written only by package init functions, before any server or client runs; read
// without a lock afterwards.
var requestKinds = map[int16]requestKind{}

type requestKind struct {
	name   string
	newReq func() kmsg.Request
}

// RegisterRequestKind teaches the edge a request type kmsg does not know: Petrel's own
// broker-to-broker APIs, at keys outside Kafka's range, which Register and
// RegisterInternal then accept like any other and the server decodes with newReq (an
// empty request of the kind, implementing kmsg.Request with its response); name is the
// API's name in logs and metrics. Call it only from an init function. It panics for a
// key kmsg knows or one registered twice.
func RegisterRequestKind(key int16, name string, newReq func() kmsg.Request) {
	if kmsg.RequestForKey(key) != nil {
		panic(fmt.Sprintf("rpc: RegisterRequestKind: key %d is Kafka's %s", key, kmsg.NameForKey(key)))
	}
	if _, dup := requestKinds[key]; dup || newReq == nil {
		panic(fmt.Sprintf("rpc: RegisterRequestKind: key %d registered twice or without a constructor", key))
	}
	requestKinds[key] = requestKind{name, newReq}
}

// RequestForKey is kmsg.RequestForKey extended with the kinds of RegisterRequestKind.
func RequestForKey(key int16) kmsg.Request {
	if r := kmsg.RequestForKey(key); r != nil {
		return r
	}
	if k, ok := requestKinds[key]; ok {
		return k.newReq()
	}
	return nil
}

// NameForKey is kmsg.NameForKey extended with the kinds of RegisterRequestKind.
func NameForKey(key int16) string {
	if k, ok := requestKinds[key]; ok {
		return k.name
	}
	return kmsg.NameForKey(key)
}
