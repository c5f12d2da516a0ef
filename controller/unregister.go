package controller

// UnregisterBroker's decision: a fenced, silent broker that holds no replica leaves the
// image.

import (
	"context"
	"fmt"
	"time"

	"github.com/petrel-broker/petrel/metadata"
)

// UnregisterBroker removes broker id from the image. It is refused for an unknown id
// (ErrBrokerNotRegistered), a broker that is unfenced or still heartbeating (it would
// register again), and one that still holds replicas (ErrInvalidRequest). The caller
// forgets the broker's session (Sessions.Forget) once it has also left the Raft
// configuration.
func (c *Controller) UnregisterBroker(ctx context.Context, id int32) error {
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		br := im.Brokers[id]
		switch {
		case br == nil:
			return nil, fmt.Errorf("%w: broker %d is not registered", ErrBrokerNotRegistered, id)
		case !br.Fenced || c.sessions.Heartbeating(id, time.Now(), c.cfg.SessionTimeout):
			return nil, fmt.Errorf("%w: broker %d is running; stop it first (it would register again)", ErrInvalidRequest, id)
		}
		if n, first := im.ReplicaCount(id); n > 0 {
			return nil, fmt.Errorf("%w: broker %d still holds %d replica(s), %s first; move them to other brokers with petrel reassign first",
				ErrInvalidRequest, id, n, first)
		}
		return metadata.UnregisterBrokerRecords(im, id), nil
	})
	return err
}
