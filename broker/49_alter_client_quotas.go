package broker

// AlterClientQuotas (key 49), v0-1: forwarded to the controller, which validates each
// entry (entity types user and client-id, each at most once; known keys; positive
// values) and commits its ClientQuotaRecords in one entry per entry of the request.
// Needs AlterConfigs on the cluster.

import (
	"context"
	"fmt"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.AlterClientQuotas, 0, 1, (*Broker).respondFromController, apiOpts{
		authorize:  clusterOnly(auth.OpAlterConfigs),
		controller: onController((*Broker).alterClientQuotas),
		fillError:  fillErrorAlterClientQuotas,
		isNotController: func(resp kmsg.Response) bool {
			return allNotController(resp.(*kmsg.AlterClientQuotasResponse).Entries, func(e kmsg.AlterClientQuotasResponseEntry) int16 { return e.ErrorCode })
		},
		adminChange: true,
	})
}

// alterClientQuotas runs on the controller.
func (b *Broker) alterClientQuotas(ctx context.Context, r *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		var entity []metadata.ClientQuotaEntityData
		for _, part := range e.Entity {
			rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rp.Type, rp.Name = part.Type, part.Name
			re.Entity = append(re.Entity, rp)
			entity = append(entity, metadata.ClientQuotaEntityData{EntityType: part.Type, EntityName: part.Name})
		}
		records, err := quotaRecords(entity, e.Ops)
		if err == nil && !r.ValidateOnly {
			_, err = b.ctrl.Do(ctx, func(*metadata.Image) ([]metadata.Record, error) { return records, nil })
		}
		if err != nil {
			re.ErrorCode, re.ErrorMessage = b.errorCodeLogged(err, "alter client quotas"), errorMessage(err)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// quotaRecords validates one entry and returns its records.
func quotaRecords(entity []metadata.ClientQuotaEntityData, ops []kmsg.AlterClientQuotasRequestEntryOp) ([]metadata.Record, error) {
	if len(entity) == 0 {
		return nil, fmt.Errorf("%w: empty entity", auth.ErrInvalidQuota)
	}
	seen := map[string]bool{}
	for _, part := range entity {
		if part.EntityType != auth.EntityUser && part.EntityType != auth.EntityClientID {
			return nil, fmt.Errorf("%w: unknown entity type %q", auth.ErrInvalidQuota, part.EntityType)
		}
		if seen[part.EntityType] {
			return nil, fmt.Errorf("%w: entity type %q named twice", auth.ErrInvalidQuota, part.EntityType)
		}
		seen[part.EntityType] = true
	}
	var records []metadata.Record
	keys := map[string]bool{}
	for _, op := range ops {
		if keys[op.Key] {
			return nil, fmt.Errorf("%w: key %q named twice", auth.ErrInvalidQuota, op.Key)
		}
		keys[op.Key] = true
		if op.Remove {
			if err := auth.ValidateQuota(op.Key, 1); err != nil {
				return nil, err
			}
		} else if err := auth.ValidateQuota(op.Key, op.Value); err != nil {
			return nil, err
		}
		records = append(records, metadata.ClientQuotaRecord{Entity: entity, Key: op.Key, Value: op.Value, Remove: op.Remove})
	}
	if len(records) == 0 {
		records = append(records, metadata.NoOpRecord{})
	}
	return records, nil
}

// fillErrorAlterClientQuotas is AlterClientQuotas's apiOpts.fillError.
func fillErrorAlterClientQuotas(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	r := resp.(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.(*kmsg.AlterClientQuotasRequest).Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode, re.ErrorMessage = code, errorMessage(cause)
		for _, part := range e.Entity {
			rp := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rp.Type, rp.Name = part.Type, part.Name
			re.Entity = append(re.Entity, rp)
		}
		r.Entries = append(r.Entries, re)
	}
}
