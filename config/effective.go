package config

import (
	"maps"
	"slices"
)

// EffectiveProperty is one broker property as a node would run with it.
type EffectiveProperty struct {
	Name  string
	Value string // "[hidden]" for a sensitive value
	// Source is where the value comes from: SourceDefault, SourceConfigFile,
	// SourceEnvironment, SourceSet, or the flag that supplies it ("--listen").
	Source string
	// From names the supplied property the value derives from when it is another one
	// (log.retention.hours for log.retention.ms), as Kafka's config synonyms do.
	From string
	// Status is "" for a property Petrel implements; "ignored (from --flag)", "not
	// implemented" or "unknown" for a supplied property it does not act on.
	Status string
}

// Effective returns every property with its effective value and source: the table's
// properties in name order, then supplied properties Petrel does not act on. props
// are the supplied properties, sources where each came from (SourceSet when missing),
// and flags the values the flags give the properties they supply (by property name;
// "" for advertised.listeners is its default).
func Effective(props, sources, flags map[string]string) []EffectiveProperty {
	source := func(name string) string {
		if s, ok := sources[name]; ok {
			return s
		}
		return SourceSet
	}
	names := BrokerNames()
	slices.Sort(names)
	var out []EffectiveProperty
	for _, name := range names {
		def, _ := BrokerDef(name)
		if def.Flag != "" {
			p := EffectiveProperty{Name: name, Value: flags[name], Source: def.Flag}
			if v, ok := props[name]; ok && ListenerFlagProperty(name) {
				p.Value, p.Source = v, source(name)
			} else if name == "advertised.listeners" && p.Value == "" {
				p.Source = SourceDefault
			}
			out = append(out, p)
			continue
		}
		value, from := BrokerValue(props, name)
		p := EffectiveProperty{Name: name, Value: value, Source: SourceDefault}
		if from != "" {
			p.Source = source(from)
		}
		if from != "" && from != name {
			p.From = from + "=" + Shown(from, props[from])
		}
		if p.Value != "" {
			p.Value = Shown(name, p.Value)
		}
		out = append(out, p)
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		def, known := BrokerDef(name)
		if !known {
			def, known = ListenerPropertyDef(name)
			if known {
				def.Flag = ""
			}
		}
		p := EffectiveProperty{Name: name, Value: props[name], Source: source(name)}
		switch {
		case known && def.Flag != "" && ListenerFlagProperty(name):
			continue // shown above, the property winning over the flag
		case known && def.Flag != "":
			p.Status = "ignored (from " + def.Flag + ")"
		case known:
			continue
		default:
			p.Status = "unknown"
			if _, ok := UnimplementedBrokerConfig(name); ok {
				p.Status = "not implemented"
			}
		}
		p.Value = Shown(name, p.Value)
		out = append(out, p)
	}
	return out
}
