package broker

import (
	"slices"
	"strconv"

	"github.com/petrel-broker/petrel/config"
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

// CheckConfig validates cfg as Start does, without opening or binding anything. It
// returns every property with its effective value and source (the table's properties in
// name order, then supplied properties Petrel does not act on), and the warnings Start
// would log; the error is the one Start would return.
func CheckConfig(cfg Config) ([]EffectiveProperty, []string, error) {
	if cfg.Properties == nil {
		cfg.Properties = map[string]string{}
	}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	warnings, err := cfg.checkProperties()
	if err != nil {
		return nil, warnings, err
	}
	return cfg.effectiveProperties(), warnings, nil
}

func (c *Config) effectiveProperties() []EffectiveProperty {
	names := config.BrokerNames()
	slices.Sort(names)
	var out []EffectiveProperty
	for _, name := range names {
		def, _ := config.BrokerDef(name)
		if def.Flag != "" {
			out = append(out, c.flagProperty(def))
			continue
		}
		value, from := c.brokerValueFrom(name)
		p := EffectiveProperty{Name: name, Value: value, Source: config.SourceDefault}
		if from != "" {
			p.Source = c.propertySource(from)
		}
		if from != "" && from != name {
			p.From = from + "=" + config.Shown(from, c.Properties[from])
		}
		if p.Value != "" {
			p.Value = config.Shown(name, p.Value)
		}
		out = append(out, p)
	}
	for _, name := range sortedKeys(c.Properties) {
		def, known := config.BrokerDef(name)
		if !known {
			def, known = config.ListenerPropertyDef(name)
			if known {
				def.Flag = ""
			}
		}
		p := EffectiveProperty{Name: name, Value: c.Properties[name], Source: c.propertySource(name)}
		switch {
		case known && def.Flag != "" && config.ListenerFlagProperty(name):
			continue // shown above, the property winning over the flag
		case known && def.Flag != "":
			p.Status = "ignored (from " + def.Flag + ")"
		case known:
			continue
		default:
			p.Status = "unknown"
			if _, ok := config.UnimplementedBrokerConfig(name); ok {
				p.Status = "not implemented"
			}
		}
		p.Value = config.Shown(name, p.Value)
		out = append(out, p)
	}
	return out
}

// flagProperty is a property whose value a flag supplies.
func (c *Config) flagProperty(def config.Def) EffectiveProperty {
	p := EffectiveProperty{Name: def.Name, Source: def.Flag}
	switch def.Name {
	case "node.id":
		p.Value = strconv.Itoa(int(c.NodeID))
	case "log.dirs":
		p.Value = c.logsDir()
	case "listeners":
		p.Value = "PLAINTEXT://" + c.Listen
		if v, ok := c.Properties[def.Name]; ok {
			p.Value, p.Source = v, c.propertySource(def.Name)
		}
	case config.MetricsListenerProperty:
		p.Value = c.MetricsListen
	case "advertised.listeners":
		if v, ok := c.Properties[def.Name]; ok {
			p.Value, p.Source = v, c.propertySource(def.Name)
		} else if c.Advertised == "" {
			p.Value, p.Source = "", config.SourceDefault
		} else {
			p.Value = "PLAINTEXT://" + c.Advertised
		}
	}
	return p
}
