package broker

// UpdateFeatures (key 57), v0-2 (KIP-584, KIP-1022): finalizes feature levels through
// the controller, all or nothing. v0's AllowDowngrade reads as a safe downgrade; v1+
// carry the upgrade type (1 upgrade, 2 safe downgrade, 3 unsafe downgrade) and
// ValidateOnly. Kafka's validation (metadata.PlanFeatureUpdates): a level outside the
// controller's or any registered broker's supported range, a downgrade without a
// downgrade type, a downgrade type to a newer level, an unsafe metadata.version
// downgrade or a safe one across a metadata change, and a level whose
// metadata.version dependency is not met are INVALID_UPDATE_VERSION with Kafka's
// message; a feature named twice is INVALID_REQUEST. The error is top-level, and v0-1
// repeat it on every feature's result (v2 has no results). Needs ALTER on CLUSTER.
// Answered once every live broker has applied the change.

import (
	"context"
	"fmt"
	"strings"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.UpdateFeatures, 0, 2, (*Broker).respondFromController, apiOpts{
		authorize:   clusterOnly(auth.OpAlter),
		controller:  onController((*Broker).updateFeatures),
		fillError:   fillErrorUpdateFeatures,
		adminChange: true,
		ownTimeout:  true,
		isNotController: func(resp kmsg.Response) bool {
			return resp.(*kmsg.UpdateFeaturesResponse).ErrorCode == kerr.NotController.Code
		},
	})
}

// updateFeatures runs on the controller (controller/features.go decides).
func (b *Broker) updateFeatures(ctx context.Context, r *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	resp := r.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	updates := make([]metadata.FeatureUpdate, 0, len(r.FeatureUpdates))
	seen := map[string]bool{}
	for _, u := range r.FeatureUpdates {
		if seen[u.Feature] {
			fillErrorUpdateFeatures(r, resp, kerr.InvalidRequest.Code,
				fmt.Errorf("Feature %s was specified more than once.", u.Feature))
			return resp
		}
		seen[u.Feature] = true
		typ := metadata.UpgradeType(u.UpgradeType)
		if r.Version == 0 {
			typ = metadata.Upgrade
			if u.AllowDowngrade {
				typ = metadata.SafeDowngrade
			}
		}
		updates = append(updates, metadata.FeatureUpdate{Name: u.Feature, Level: u.MaxVersionLevel, Type: typ})
	}
	if _, err := b.ctrl.UpdateFeatures(ctx, updates, r.ValidateOnly); err != nil {
		fillErrorUpdateFeatures(r, resp, b.errorCodeLogged(err, "update features"), err)
		return resp
	}
	fillErrorUpdateFeatures(r, resp, 0, nil)
	return resp
}

// fillErrorUpdateFeatures is UpdateFeatures' apiOpts.fillError: the top-level error,
// repeated on each feature's result before v2.
func fillErrorUpdateFeatures(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r, w := req.(*kmsg.UpdateFeaturesRequest), resp.(*kmsg.UpdateFeaturesResponse)
	w.ErrorCode = code
	var msg *string
	if cause != nil {
		m := strings.TrimPrefix(cause.Error(), metadata.ErrInvalidUpdateVersion.Error()+": ")
		msg = &m
	}
	w.ErrorMessage = msg
	w.Results = w.Results[:0]
	if r.Version >= 2 {
		return
	}
	for _, u := range r.FeatureUpdates {
		res := kmsg.NewUpdateFeaturesResponseResult()
		res.Feature, res.ErrorCode, res.ErrorMessage = u.Feature, code, msg
		w.Results = append(w.Results, res)
	}
}
