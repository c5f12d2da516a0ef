package config

import "testing"

// TestDynamicConfigsFollowKafka walks the property table: a property changes at run
// time exactly when Kafka's does (kafkaDynamicBrokerConfigs, the topic synonyms), except
// the ones listed in notDynamicYet with their reason; DescribeConfigs' read_only says so.
func TestDynamicConfigsFollowKafka(t *testing.T) {
	defs := append(append([]Def{}, BrokerDefs...), BrokerSynonymDefs()...)
	for _, def := range defs {
		kafka := kafkaDynamic(def.Name)
		petrel := dynamicBrokerConfigNames[def.Name]
		switch {
		case kafka && !petrel && notDynamicYet[def.Name] == "":
			t.Errorf("%s is dynamic in Kafka but not here, and not listed in notDynamicYet", def.Name)
		case !kafka && petrel:
			t.Errorf("%s is dynamic here but read-only in Kafka", def.Name)
		case def.ReadOnly == petrel:
			t.Errorf("%s: ReadOnly=%v in the table, but dynamic=%v", def.Name, def.ReadOnly, petrel)
		}
	}
	for name := range notDynamicYet {
		if !kafkaDynamic(name) {
			t.Errorf("notDynamicYet lists %s, which Kafka does not change at run time either", name)
		}
	}
	for name := range dynamicBrokerConfigNames {
		if _, ok := brokerByName[name]; !ok {
			t.Errorf("dynamicBrokerConfigNames lists %s, which is not in the table", name)
		}
	}
}
