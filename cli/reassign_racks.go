package cli

// The racks behind `petrel reassign --generate`: as kafka-reassign-partitions.sh, the
// proposal is rack-aware (metadata.AssignReplicasRackAware) when the brokers of
// --broker-list have racks (broker.rack), unless --disable-rack-aware; it is refused
// when only some of them have one, with Kafka's message.

import (
	"context"
	"errors"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/petrel-broker/petrel/metadata"
)

// errPartialRacks is Kafka's refusal of a rack-aware plan over brokers of which only
// some have a rack.
var errPartialRacks = errors.New("not all brokers have rack information for replica rack aware assignment; set broker.rack on every broker or use --disable-rack-aware")

// brokerRacks returns the rack of each broker the cluster lists that has one.
func brokerRacks(ctx context.Context, cl *clientcmd.Client) (map[int32]string, error) {
	meta, err := cl.Admin().BrokerMetadata(ctx)
	if err != nil {
		return nil, cl.Explain(err)
	}
	racks := map[int32]string{}
	for _, b := range meta.Brokers {
		if b.Rack != nil && *b.Rack != "" {
			racks[b.NodeID] = *b.Rack
		}
	}
	return racks, nil
}

// proposeReplicas places partitions × rf replicas on brokers from the first broker on
// (Kafka draws the start at random): by racks unless racks is nil (--disable-rack-aware)
// or none of brokers has one.
func proposeReplicas(brokers []int32, racks map[int32]string, partitions, rf int) ([][]int32, error) {
	withRack := 0
	for _, b := range brokers {
		if racks[b] != "" {
			withRack++
		}
	}
	switch {
	case withRack == 0:
		return metadata.AssignReplicas(brokers, partitions, rf, 0, 0)
	case withRack < len(brokers):
		return nil, errPartialRacks
	}
	return metadata.AssignReplicasRackAware(brokers, racks, partitions, rf, 0, 0)
}
