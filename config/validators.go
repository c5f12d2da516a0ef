package config

// Validators of Kafka properties whose values have a syntax of their own.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// throttledReplicaList is Kafka's ThrottledReplicaListValidator: "*" or a list of
// partitionId:brokerId.
type throttledReplicaList struct{}

func (throttledReplicaList) check(v parsedValue) string {
	const msg = "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
	if len(v.list) == 1 && v.list[0] == "*" {
		return ""
	}
	for _, e := range v.list {
		p, b, ok := strings.Cut(e, ":")
		if !ok {
			return msg
		}
		if _, err := strconv.ParseUint(strings.TrimSpace(p), 10, 31); err != nil {
			return msg
		}
		if _, err := strconv.ParseUint(strings.TrimSpace(b), 10, 31); err != nil {
			return msg
		}
	}
	return ""
}

func (throttledReplicaList) String() string {
	return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
}

// ParseConnectionOverrides parses max.connections.per.ip.overrides, host:count,...
// (Kafka's parseCsvMap: each entry split at its last colon, so IPv6 addresses work).
func ParseConnectionOverrides(s string) (map[string]int, error) {
	out := map[string]int{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, entry := range strings.Split(s, ",") {
		i := strings.LastIndex(entry, ":")
		if i < 0 {
			return nil, fmt.Errorf("entry %q is not host:count", strings.TrimSpace(entry))
		}
		host, count := strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:])
		n, err := strconv.ParseInt(count, 10, 32)
		if host == "" || err != nil {
			return nil, fmt.Errorf("entry %q is not host:count with an INT count", strings.TrimSpace(entry))
		}
		out[host] = int(n)
	}
	return out, nil
}

// connectionOverridesValidator checks max.connections.per.ip.overrides.
type connectionOverridesValidator struct{}

func (connectionOverridesValidator) check(v parsedValue) string {
	if _, err := ParseConnectionOverrides(v.str); err != nil {
		return "Expected host:count,... : " + err.Error()
	}
	return ""
}

func (connectionOverridesValidator) String() string { return "host:count,..." }

// foldValidator is ConfigDef.CaseInsensitiveValidString.in: one of a fixed set, in any
// case.
type foldValidator []string

func oneOfFold(values ...string) Validator { return foldValidator(values) }

func (s foldValidator) check(v parsedValue) string {
	if slices.ContainsFunc(s, func(e string) bool { return strings.EqualFold(e, v.str) }) {
		return ""
	}
	return "String must be one of (case insensitive): " + strings.ToUpper(strings.Join(s, ", "))
}

func (s foldValidator) String() string {
	return "(case insensitive) [" + strings.ToUpper(strings.Join(s, ", ")) + "]"
}

// consumerAssignorNames maps the names group.consumer.assignors accepts, Kafka's short
// names and class names of its built-in assignors, to the short name.
var consumerAssignorNames = map[string]string{
	"uniform": "uniform",
	"range":   "range",
	"org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
	"org.apache.kafka.coordinator.group.assignor.RangeAssignor":   "range",
}

// assignorList checks group.consumer.assignors: Kafka's
// ValidList.anyNonDuplicateValues (not empty, no value twice), and only the built-in
// assignors, which are all Petrel has (Kafka fails at start on a class it cannot load).
type assignorList struct{}

func (assignorList) check(v parsedValue) string {
	if len(v.list) == 0 {
		return "must not be empty"
	}
	seen := map[string]bool{}
	for _, e := range v.list {
		name, ok := consumerAssignorNames[e]
		if !ok {
			return "Class " + e + " cannot be found (Petrel has only the built-in assignors uniform and range)"
		}
		if seen[name] {
			return "values must not be duplicated"
		}
		seen[name] = true
	}
	return ""
}

func (assignorList) String() string {
	return "uniform, range, or their class names org.apache.kafka.coordinator.group.assignor.UniformAssignor, ...RangeAssignor"
}
