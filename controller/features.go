package controller

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// UpdateFeatures applies feature updates (UpdateFeatures, KIP-584/KIP-1022) all or
// nothing: validated against the latest image, this node's supported ranges and every
// registered broker's (metadata.PlanFeatureUpdates), then written as one entry. With
// validateOnly nothing is written. It returns the image after the change.
func (c *Controller) UpdateFeatures(ctx context.Context, updates []metadata.FeatureUpdate, validateOnly bool) (*metadata.Image, error) {
	return c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		records, err := metadata.PlanFeatureUpdates(im, c.cfg.NodeID, metadata.SupportedFeatures(), updates)
		if err != nil || validateOnly {
			return nil, err
		}
		if len(records) > 0 {
			c.log.Info("finalized feature levels changing", "updates", fmt.Sprint(updates))
		}
		return records, nil
	})
}

// checkRegistrationFeatures refuses a registration that cannot follow the finalized
// feature levels (Kafka's rule at registration): a broker of an older Petrel once the
// cluster has feature records, or one whose ranges leave out a finalized level.
func checkRegistrationFeatures(im *metadata.Image, reg Registration) error {
	if reg.Features == nil {
		if im.Features != nil {
			return fmt.Errorf("%w: broker %d registered without supported features, and the cluster has finalized feature levels", ErrUnsupportedFeatures, reg.BrokerID)
		}
		return nil
	}
	if err := metadata.UnsupportedFinalized(im, reg.Features); err != nil {
		return fmt.Errorf("%w: broker %d: %v", ErrUnsupportedFeatures, reg.BrokerID, err)
	}
	return nil
}
