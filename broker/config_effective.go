package broker

import (
	"strconv"

	"github.com/petrel-broker/petrel/config"
)

// CheckConfig validates cfg as Start does, without opening or binding anything. It
// returns every property with its effective value and source (the table's properties in
// name order, then supplied properties Petrel does not act on), and the warnings Start
// would log; the error is the one Start would return.
func CheckConfig(cfg Config) ([]config.EffectiveProperty, []string, error) {
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

func (c *Config) effectiveProperties() []config.EffectiveProperty {
	flags := map[string]string{
		"node.id":                      strconv.Itoa(int(c.NodeID)),
		"log.dirs":                     c.logsDir(),
		"listeners":                    "PLAINTEXT://" + c.Listen,
		config.MetricsListenerProperty: c.MetricsListen,
	}
	if c.Advertised != "" {
		flags["advertised.listeners"] = "PLAINTEXT://" + c.Advertised
	}
	return config.Effective(c.Properties, c.PropertySources, flags)
}
