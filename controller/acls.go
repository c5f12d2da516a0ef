package controller

// CreateAcls' and DeleteAcls' writes. The ACLs' validation and matching rules are
// auth's (which this package does not import): the broker validates each entry and
// passes each filter as a predicate over the stored records.

import (
	"context"
	"crypto/rand"

	"github.com/petrel-broker/petrel/metadata"
)

// CreateACLs stores each of entries that the image does not hold yet (the same fields;
// ids are picked here), in one entry. Nothing new still writes a NoOp record, so the
// answer follows every earlier change.
func (c *Controller) CreateACLs(ctx context.Context, entries []metadata.AccessControlEntryRecord) error {
	ids := make([]metadata.Uuid, len(entries))
	for i := range ids {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		ids[i] = metadata.UuidFromBytes(raw)
	}
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		have := map[metadata.AccessControlEntryRecord]bool{}
		for _, r := range im.ACLs {
			r.ID = metadata.Uuid{}
			have[r] = true
		}
		var records []metadata.Record
		for i, e := range entries {
			e.ID = metadata.Uuid{}
			if have[e] {
				continue
			}
			have[e] = true
			e.ID = ids[i]
			records = append(records, e)
		}
		if len(records) == 0 {
			records = append(records, metadata.NoOpRecord{})
		}
		return records, nil
	})
	return err
}

// DeleteACLs removes every stored ACL that a filter matches, in one entry, and returns
// each filter's matches (a nil filter, one the broker refused, matches nothing). No
// match still writes a NoOp record.
func (c *Controller) DeleteACLs(ctx context.Context, filters []func(metadata.AccessControlEntryRecord) bool) ([][]metadata.AccessControlEntryRecord, error) {
	matched := make([][]metadata.AccessControlEntryRecord, len(filters))
	_, err := c.Do(ctx, func(im *metadata.Image) ([]metadata.Record, error) {
		var records []metadata.Record
		removed := map[metadata.Uuid]bool{}
		for i, f := range filters {
			matched[i] = nil
			if f == nil {
				continue
			}
			for id, rec := range im.ACLs {
				if !f(rec) {
					continue
				}
				matched[i] = append(matched[i], rec)
				if !removed[id] {
					removed[id] = true
					records = append(records, metadata.RemoveAccessControlEntryRecord{ID: id})
				}
			}
		}
		if len(records) == 0 {
			records = append(records, metadata.NoOpRecord{})
		}
		return records, nil
	})
	if err != nil {
		return nil, err // the plan may still run: its matches are not read
	}
	return matched, nil
}
