package controller

// AllocateProducerIds' decision: the next block of producer ids for a broker.

import (
	"context"
	"fmt"
	"math"

	"github.com/petrel-broker/petrel/metadata"
)

// ProducerIDBlockSize is how many producer ids one AllocateProducerIds hands out
// (Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE).
const ProducerIDBlockSize = 1000

// AllocateProducerIDs hands broker id (of epoch epoch) the next block of
// ProducerIDBlockSize producer ids and returns its first id. It writes a ProducerIds
// record moving the cluster's next producer id up by a block; decisions run one at a
// time on a fresh image after each term's barrier, so no id is handed out twice, also
// across controller failover (an entry whose answer was lost only wastes its block).
func (c *Controller) AllocateProducerIDs(ctx context.Context, id int32, epoch int64) (int64, error) {
	var start int64
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		br := im.Brokers[id]
		switch {
		case br == nil:
			return nil, fmt.Errorf("%w: %d", ErrBrokerNotRegistered, id)
		case br.Epoch != epoch:
			return nil, fmt.Errorf("%w: broker %d sent %d, registered %d", ErrStaleBrokerEpoch, id, epoch, br.Epoch)
		case im.NextProducerID > math.MaxInt64-ProducerIDBlockSize:
			return nil, ErrProducerIDsExhausted
		}
		start = im.NextProducerID
		return []metadata.Record{metadata.ProducerIdsRecord{BrokerID: id, BrokerEpoch: epoch, NextProducerID: start + ProducerIDBlockSize}}, nil
	})
	if err != nil {
		return 0, err // the plan may still run when ctx ended: start is not read
	}
	return start, nil
}
