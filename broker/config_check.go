package broker

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xrash/smetrics"
)

// checkProperties validates every supplied broker property, as Kafka does at start, and
// returns the warnings Kafka would log: a name that is not a known config (with the
// closest known name), a Kafka property Petrel does not implement yet, a property that
// a flag supplies instead, and a valid value Petrel does not act on. A value its
// definition refuses is an error. With c.StrictConfig the warnings are errors too.
func (c *Config) checkProperties() (warnings []string, err error) {
	var errs []string
	for _, name := range sortedKeys(c.Properties) {
		value := c.Properties[name]
		src := c.propertySource(name)
		def, ok := brokerConfigByName[name]
		if !ok {
			def, ok = listenerPropertyDef(name)
		}
		if !ok {
			warnings = append(warnings, unknownPropertyWarning(name, src))
			continue
		}
		if err := checkConfigValue(def, value); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if def.Flag != "" && !listenerFlagProperty(name) {
			warnings = append(warnings, fmt.Sprintf("The configuration '%s' was supplied (%s) but Petrel takes it from %s; the value is ignored", name, src, def.Flag))
		}
		if w := limitWarning(def, value); w != "" {
			warnings = append(warnings, w+"; the value is accepted but not acted on")
		}
	}
	if len(errs) > 0 {
		return warnings, fmt.Errorf("%w: %s", ErrInvalidBrokerConfig, strings.Join(errs, "; "))
	}
	if c.StrictConfig && len(warnings) > 0 {
		return warnings, fmt.Errorf("%w (--strict-config): %s", ErrInvalidBrokerConfig, strings.Join(warnings, "; "))
	}
	return warnings, nil
}

// unknownPropertyWarning words the warning for a supplied name outside the table.
func unknownPropertyWarning(name, src string) string {
	if u, ok := unimplementedBrokerConfig(name); ok {
		return fmt.Sprintf("The configuration '%s' was supplied (%s) but Petrel does not implement it yet (%s); it is ignored", name, src, u.Note)
	}
	w := fmt.Sprintf("The configuration '%s' was supplied (%s) but isn't a known config", name, src)
	if s := suggestProperty(name); s != "" {
		w += "; did you mean " + s + "?"
	}
	return w
}

// suggestProperty returns the known property closest to a mistyped name, or "". A topic
// config given as a broker property suggests its broker synonym.
func suggestProperty(name string) string {
	if def, ok := topicConfigByName[name]; ok && def.BrokerSynonym != name && def.BrokerSynonym != "" {
		return def.BrokerSynonym
	}
	best, bestDist := "", -1
	consider := func(known string) {
		d := editDistance(name, known)
		if bestDist < 0 || d < bestDist || (d == bestDist && known < best) {
			best, bestDist = known, d
		}
	}
	for known := range brokerConfigByName {
		consider(known)
	}
	for _, u := range unimplementedBrokerConfigs {
		consider(u.Name)
	}
	if bestDist < 0 || bestDist > max(2, len(name)/5) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes (smetrics'
// Wagner-Fischer with unit costs).
func editDistance(a, b string) int { return smetrics.WagnerFischer(a, b, 1, 1, 1) }

// unimplementedBrokerConfig finds name among the Kafka broker properties Petrel knows
// but does not implement: by exact name, then by prefix.
func unimplementedBrokerConfig(name string) (unimplementedConfig, bool) {
	return findUnimplemented(name, unimplementedBrokerConfigs, unimplementedBrokerConfigPrefixes)
}

// unimplementedTopicConfig is unimplementedBrokerConfig for topic configs.
func unimplementedTopicConfig(name string) (unimplementedConfig, bool) {
	return findUnimplemented(name, unimplementedTopicConfigs, nil)
}

func findUnimplemented(name string, names, prefixes []unimplementedConfig) (unimplementedConfig, bool) {
	if i := slices.IndexFunc(names, func(u unimplementedConfig) bool { return u.Name == name }); i >= 0 {
		return names[i], true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(name, p.Name) {
			return p, true
		}
	}
	return unimplementedConfig{}, false
}
