package broker

// The broker's side of producer ids: coordinator.ProducerIDs hands them out from
// blocks this file asks the controller for (AllocateProducerIds).

import (
	"context"
	"errors"
	"time"

	"github.com/petrel-broker/petrel/coordinator"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// newProducerIDs returns this broker's producer id manager.
func newProducerIDs(b *Broker) *coordinator.ProducerIDs {
	return coordinator.NewProducerIDs(coordinator.ProducerIDsConfig{
		Allocate: b.requestProducerIDBlock,
		Go:       b.goLoop,
		Stop:     b.stop,
		Logger:   b.logger,
	})
}

// requestProducerIDBlock sends one AllocateProducerIds to the controller.
func (b *Broker) requestProducerIDBlock() (int64, int32, error) {
	epoch := b.BrokerEpoch()
	if epoch < 0 {
		return 0, 0, errors.New("not registered yet")
	}
	ctx, cancel := b.waitTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = b.cfg.NodeID, epoch
	resp, err := b.controllerCall(ctx, req)
	if err != nil {
		return 0, 0, err
	}
	r := resp.(*kmsg.AllocateProducerIDsResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return 0, 0, err
	}
	return r.ProducerIDStart, r.ProducerIDLen, nil
}
