package broker

import (
	"fmt"
	"strings"

	"github.com/petrel-broker/petrel/config"
)

// checkProperties validates every supplied broker property, as Kafka does at start, and
// returns the warnings Kafka would log: a name that is not a known config (with the
// closest known name), a Kafka property Petrel does not implement yet, a property that
// a flag supplies instead, and a valid value Petrel does not act on. A value its
// definition refuses is an error, and so is a breach of Kafka's rules across the group.*
// properties (config.CheckGroupCoordinatorProperties). With c.StrictConfig the warnings are errors too.
func (c *Config) checkProperties() (warnings []string, err error) {
	var errs []string
	for _, name := range sortedKeys(c.Properties) {
		value := c.Properties[name]
		src := c.propertySource(name)
		def, ok := config.BrokerDef(name)
		if !ok {
			def, ok = config.ListenerPropertyDef(name)
		}
		if !ok {
			warnings = append(warnings, config.UnknownPropertyWarning(name, src))
			continue
		}
		if err := config.CheckValue(def, value); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if def.Flag != "" && !config.ListenerFlagProperty(name) {
			warnings = append(warnings, fmt.Sprintf("The configuration '%s' was supplied (%s) but Petrel takes it from %s; the value is ignored", name, src, def.Flag))
		}
		if w := config.LimitWarning(def, value); w != "" {
			warnings = append(warnings, w+"; the value is accepted but not acted on")
		}
	}
	if len(errs) == 0 {
		// Kafka's rules across properties, once each is valid on its own.
		if err := config.CheckGroupCoordinatorProperties(c.Properties); err != nil {
			errs = append(errs, err.Error())
		}
		if err := config.CheckShareGroupProperties(c.Properties); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return warnings, fmt.Errorf("%w: %s", config.ErrInvalidBrokerConfig, strings.Join(errs, "; "))
	}
	if c.StrictConfig && len(warnings) > 0 {
		return warnings, fmt.Errorf("%w (--strict-config): %s", config.ErrInvalidBrokerConfig, strings.Join(warnings, "; "))
	}
	return warnings, nil
}
