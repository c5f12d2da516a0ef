package metadata

import "reflect"

// ConfigsChangedSince reports whether im's configs may differ from prev's. Apply
// replaces a resource's config map whenever it changes it and shares the others, so
// two images of one lineage have the same configs exactly when they hold the same maps;
// an image restored from a snapshot has fresh maps and counts as changed. Reconcilers
// use it to skip re-resolving the configs of topics whose records did not change.
func (im *Image) ConfigsChangedSince(prev *Image) bool {
	if prev == nil || len(im.Configs) != len(prev.Configs) {
		return true
	}
	for res, m := range im.Configs {
		old, ok := prev.Configs[res]
		if !ok || reflect.ValueOf(m).UnsafePointer() != reflect.ValueOf(old).UnsafePointer() {
			return true
		}
	}
	return false
}
