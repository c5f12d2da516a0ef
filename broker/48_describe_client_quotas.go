package broker

// DescribeClientQuotas (key 48), v0-1: the quotas of this broker's image whose
// entities match every component (exact name, the default entity, or any), and with
// strict, name no other entity type. Needs DescribeConfigs on the cluster.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/petrel-broker/petrel/auth"
	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() {
	registerAPI(kmsg.DescribeClientQuotas, 0, 1, (*Broker).handleDescribeClientQuotas, apiOpts{
		authorize: clusterOnly(auth.OpDescribeConfigs),
		fillError: fillErrorDescribeClientQuotas,
	})
}

func (b *Broker) handleDescribeClientQuotas(_ context.Context, req *rpc.Request) rpc.Result {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	seen := map[string]bool{}
	for _, c := range r.Components {
		err := error(nil)
		switch {
		case c.EntityType != auth.EntityUser && c.EntityType != auth.EntityClientID:
			err = fmt.Errorf("%w: unknown entity type %q", auth.ErrInvalidQuota, c.EntityType)
		case seen[c.EntityType]:
			err = fmt.Errorf("%w: entity type %q named twice", auth.ErrInvalidQuota, c.EntityType)
		case c.MatchType > 2 || (c.MatchType == 0 && c.Match == nil):
			err = fmt.Errorf("%w: bad match type %d", auth.ErrInvalidQuota, c.MatchType)
		}
		if err != nil {
			resp.ErrorCode, resp.ErrorMessage = errorCode(err), errorMessage(err)
			return rpc.Respond(resp)
		}
		seen[c.EntityType] = true
	}
	im := b.Image()
	keys := make([]string, 0, len(im.ClientQuotas))
	for k := range im.ClientQuotas {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		q := im.ClientQuotas[k]
		names := map[string]*string{}
		for _, e := range q.Entity {
			names[e.EntityType] = e.EntityName
		}
		match := !r.Strict || len(names) == len(r.Components)
		for _, c := range r.Components {
			name, ok := names[c.EntityType]
			switch {
			case !ok:
				match = false
			case c.MatchType == 0:
				match = match && name != nil && *name == *c.Match
			case c.MatchType == 1:
				match = match && name == nil
			}
		}
		if !match {
			continue
		}
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, e := range q.Entity {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = e.EntityType, e.EntityName
			entry.Entity = append(entry.Entity, ee)
		}
		for _, key := range slices.Sorted(maps.Keys(q.Values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = key, q.Values[key]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return rpc.Respond(resp)
}

// fillErrorDescribeClientQuotas is DescribeClientQuotas's apiOpts.fillError.
func fillErrorDescribeClientQuotas(req kmsg.Request, resp kmsg.Response, code int16, cause error) {
	out := resp.(*kmsg.DescribeClientQuotasResponse)
	out.ErrorCode, out.ErrorMessage = code, errorMessage(cause)
}
