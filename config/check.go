package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/xrash/smetrics"
)

// UnknownPropertyWarning words the warning for a supplied name outside the table.
func UnknownPropertyWarning(name, src string) string {
	if u, ok := UnimplementedBrokerConfig(name); ok {
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
	if def, ok := topicByName[name]; ok && def.BrokerSynonym != name && def.BrokerSynonym != "" {
		return def.BrokerSynonym
	}
	best, bestDist := "", -1
	consider := func(known string) {
		d := editDistance(name, known)
		if bestDist < 0 || d < bestDist || (d == bestDist && known < best) {
			best, bestDist = known, d
		}
	}
	for known := range brokerByName {
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

// UnimplementedBrokerConfig finds name among the Kafka broker properties Petrel knows
// but does not implement: by exact name, then by prefix.
func UnimplementedBrokerConfig(name string) (Unimplemented, bool) {
	return findUnimplemented(name, unimplementedBrokerConfigs, unimplementedBrokerConfigPrefixes)
}

// unimplementedTopicConfig is UnimplementedBrokerConfig for topic configs.
func unimplementedTopicConfig(name string) (Unimplemented, bool) {
	return findUnimplemented(name, unimplementedTopicConfigs, nil)
}

func findUnimplemented(name string, names, prefixes []Unimplemented) (Unimplemented, bool) {
	if i := slices.IndexFunc(names, func(u Unimplemented) bool { return u.Name == name }); i >= 0 {
		return names[i], true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(name, p.Name) {
			return p, true
		}
	}
	return Unimplemented{}, false
}
