package config

// Config changes (IncrementalAlterConfigs, AlterConfigs) as metadata-log Config records.

import (
	"fmt"

	"github.com/petrel-broker/petrel/metadata"
)

// Change is one key of a resource to set (Value non-nil) or delete.
type Change struct {
	Name  string
	Value *string
}

// ChangeRecords validates changes to res, whose keys set now are current, and returns
// their Config records: a key named twice, or a value its table refuses, is
// INVALID_CONFIG; deleting a key that is not set writes nothing for it.
func ChangeRecords(current map[string]string, res metadata.ConfigResource, changes []Change) ([]metadata.Record, error) {
	seen := map[string]bool{}
	var records []metadata.Record
	for _, c := range changes {
		if seen[c.Name] {
			return nil, InvalidConfigError(fmt.Sprintf("Config %s is altered more than once", c.Name))
		}
		seen[c.Name] = true
		if c.Value != nil {
			var err error
			switch res.Type {
			case metadata.TopicResource:
				err = ValidateTopicConfig(c.Name, *c.Value)
			case metadata.GroupResource:
				err = ValidateGroupConfig(c.Name, *c.Value)
			case metadata.ClientMetricsResource:
				err = ValidateClientMetricsConfig(c.Name, *c.Value)
			default:
				err = ValidateDynamicBrokerConfig(c.Name, *c.Value, res.Name != "")
			}
			if err != nil {
				return nil, err
			}
		} else if _, set := current[c.Name]; !set {
			continue
		}
		records = append(records, metadata.ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: c.Name, Value: c.Value})
	}
	return records, nil
}

// ListType reports whether name is a LIST config of the resource type (APPEND and
// SUBTRACT apply only to those).
func ListType(t metadata.ConfigResourceType, name string) bool {
	var def Def
	switch t {
	case metadata.TopicResource:
		def, _ = TopicDef(name)
	case metadata.GroupResource:
		def, _ = GroupDef(name)
	case metadata.ClientMetricsResource:
		def, _ = ClientMetricsDef(name)
	default:
		def, _ = BrokerDef(name)
	}
	return def.Type == TypeList
}

// EnablesUnclean reports whether records turn unclean.leader.election.enable on for a
// topic or as a broker default.
func EnablesUnclean(records []metadata.Record) bool {
	for _, r := range records {
		c, ok := r.(metadata.ConfigRecord)
		if ok && c.Value != nil && c.Name == "unclean.leader.election.enable" && ParseBool(*c.Value) {
			return true
		}
	}
	return false
}
