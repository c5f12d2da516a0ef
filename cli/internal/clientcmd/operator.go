package clientcmd

import (
	"github.com/petrel-broker/petrel/broker"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// OperatorOptions are the franz-go options of a client that sends Petrel's operator
// internal APIs (ReplicaDigests, for `petrel verify replicas`): it names itself
// broker.OperatorCLISoftwareName in ApiVersions (version: the build's), so that brokers
// advertise those APIs to it, and its own version table, franz-go's stable one, knows
// their keys. TLS and SASL come from the command's flags as for any client.
func OperatorOptions(version string) []kgo.Opt {
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(broker.ReplicaDigestsKey, 0)
	return []kgo.Opt{kgo.SoftwareNameAndVersion(broker.OperatorCLISoftwareName, version), kgo.MaxVersions(versions)}
}
