package broker

// The network behind KIP-890 part 1's verification (coordinator.Verifier,
// coordinator/txn_verify.go): the transactional id's coordinator from the image, and
// AddPartitionsToTxn VerifyOnly over the kept connections to the other brokers.
// transaction.partition.verification.enable false turns verification off (produce
// appends as before KIP-890).

import (
	"context"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/petrel-broker/petrel/replication"
	"github.com/petrel-broker/petrel/txn"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newVerifier returns the broker's KIP-890 verifier; b.txns is set.
func newVerifier(b *Broker) *coordinator.Verifier {
	return coordinator.NewVerifier(coordinator.VerifierConfig{Self: b.cfg.NodeID, Local: b.txns, Net: verifyNet{b}, Stop: b.stop,
		TransactionVersion: b.transactionVersion})
}

// verifyNet is the verifier's way to the transaction coordinators.
type verifyNet struct{ b *Broker }

func (n verifyNet) TxnCoordinatorOf(id string) int32 {
	t := n.b.Image().Topic(transactionStateTopic)
	if t == nil || len(t.Partitions) == 0 {
		return -1
	}
	return t.Partitions[txn.PartitionFor(id, int32(len(t.Partitions)))].Leader
}

func (n verifyNet) AddPartitionsToTxn(ctx context.Context, leader int32, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	raw, err := n.b.peers.do(ctx, leader, req)
	if err != nil {
		return nil, err
	}
	return raw.(*kmsg.AddPartitionsToTxnResponse), nil
}

// ledPartition returns the partition of topic this broker has, nil when none (the
// append then answers).
func (b *Broker) ledPartition(topic string, partition int32) *replication.Partition {
	if lp := b.partitions.get(topic, partition); lp != nil {
		return lp.Partition
	}
	return nil
}
