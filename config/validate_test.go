package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/petrel-broker/petrel/metadata"
)

// allConfigDefs is every property of the table: topic configs, broker properties and
// the broker synonyms of topic configs.
func allConfigDefs() []Def {
	out := append([]Def{}, TopicDefs...)
	for _, name := range sortedDefNames(brokerByName) {
		out = append(out, brokerByName[name])
	}
	return out
}

func sortedDefNames(m map[string]Def) []string {
	return slices.Sorted(maps.Keys(m))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestValidators_JustInsideAndJustOutside derives, from every validator in the table, a
// value just inside it (accepted) and one just outside (refused in Kafka's wording).
func TestValidators_JustInsideAndJustOutside(t *testing.T) {
	checked := 0
	for _, def := range allConfigDefs() {
		if def.Validator == nil {
			continue
		}
		checked++
		type tc struct {
			value string
			want  string // "" = accepted by Kafka's validator
		}
		var cases []tc
		switch v := def.Validator.(type) {
		case rangeValidator:
			if v.hasMin {
				cases = append(cases, tc{itoa(v.min), ""},
					tc{itoa(v.min - 1), fmt.Sprintf("Invalid value %d for configuration %s: Value must be at least %d", v.min-1, def.Name, v.min)})
			}
			if v.hasMax {
				cases = append(cases, tc{itoa(v.max), ""},
					tc{itoa(v.max + 1), fmt.Sprintf("Invalid value %d for configuration %s: Value must be no more than %d", v.max+1, def.Name, v.max)})
			}
		case rangeOrValidator:
			msg := fmt.Sprintf("Value must be between %d and %d or equal to %d", v.min, v.max, v.or)
			cases = append(cases, tc{itoa(v.min), ""}, tc{itoa(v.max), ""}, tc{itoa(v.or), ""},
				tc{itoa(v.max + 1), fmt.Sprintf("Invalid value %d for configuration %s: %s", v.max+1, def.Name, msg)},
				tc{itoa(v.or - 1), fmt.Sprintf("Invalid value %d for configuration %s: %s", v.or-1, def.Name, msg)})
			if v.min-1 != v.or {
				cases = append(cases, tc{itoa(v.min - 1), fmt.Sprintf("Invalid value %d for configuration %s: %s", v.min-1, def.Name, msg)})
			}
		case stringValidator:
			for _, s := range v {
				cases = append(cases, tc{s, ""})
			}
			bad := v[0] + "x"
			cases = append(cases, tc{bad, fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: %s", bad, def.Name, strings.Join(v, ", "))})
			if lower := strings.ToLower(v[0]); lower != v[0] {
				// ValidString is case-sensitive.
				cases = append(cases, tc{lower, fmt.Sprintf("Invalid value %s for configuration %s: String must be one of: %s", lower, def.Name, strings.Join(v, ", "))})
			}
		case listValidator:
			for _, s := range v {
				cases = append(cases, tc{s, ""})
			}
			cases = append(cases, tc{strings.Join(v, ","), ""},
				tc{v[0] + ", bogus", fmt.Sprintf("Invalid value bogus for configuration %s: String must be one of: %s", def.Name, strings.Join(v, ", "))})
		case throttledReplicaList:
			msg := "must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
			cases = append(cases, tc{"*", ""}, tc{"0:1,1:2", ""},
				tc{"0:1,x", fmt.Sprintf("Invalid value x for configuration %s: %s", def.Name, msg)})
		case doubleRange:
			cases = append(cases, tc{javaDouble(v.min), ""}, tc{javaDouble(v.max), ""}, tc{"0.25", ""},
				tc{"-0.1", fmt.Sprintf("Invalid value -0.1 for configuration %s: Value must be at least %s", def.Name, javaDouble(v.min))},
				tc{"1.01", fmt.Sprintf("Invalid value 1.01 for configuration %s: Value must be no more than %s", def.Name, javaDouble(v.max))})
		case connectionOverridesValidator:
			cases = append(cases, tc{"", ""}, tc{"10.0.0.1:5,host.example:200", ""}, tc{"::1:3", ""},
				tc{"10.0.0.1", fmt.Sprintf("Invalid value 10.0.0.1 for configuration %s: Expected host:count,... : entry \"10.0.0.1\" is not host:count", def.Name)})
		case foldValidator:
			for _, s := range v {
				cases = append(cases, tc{s, ""}, tc{strings.ToUpper(s), ""})
			}
			cases = append(cases, tc{v[0] + "x", fmt.Sprintf("Invalid value %sx for configuration %s: String must be one of (case insensitive): %s", v[0], def.Name, strings.ToUpper(strings.Join(v, ", ")))})
		case assignorList:
			cases = append(cases, tc{"uniform", ""}, tc{"range,uniform", ""},
				tc{"org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor", ""},
				tc{"", fmt.Sprintf("Invalid value  for configuration %s: must not be empty", def.Name)},
				tc{"uniform,org.apache.kafka.coordinator.group.assignor.UniformAssignor", fmt.Sprintf("Invalid value uniform,org.apache.kafka.coordinator.group.assignor.UniformAssignor for configuration %s: values must not be duplicated", def.Name)},
				tc{"uniform,sticky", fmt.Sprintf("Invalid value sticky for configuration %s: Class sticky cannot be found (Petrel has only the built-in assignors uniform and range)", def.Name)})
		default:
			t.Fatalf("%s: validator %T has no test", def.Name, def.Validator)
		}
		for _, c := range cases {
			_, err := parseConfigValue(def, c.value)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s=%q: %v, expected it accepted", def.Name, c.value, err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Errorf("%s=%q: %v, expected %q", def.Name, c.value, err, c.want)
			case c.want != "" && !errors.Is(err, metadata.ErrInvalidConfig):
				t.Errorf("%s=%q: %v does not match ErrInvalidConfig", def.Name, c.value, err)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d properties have validators", checked)
	}
}

func TestValidators_KafkaMessages(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"segment.bytes", "-5", "Invalid value -5 for configuration segment.bytes: Value must be at least 14"},
		{"log.segment.bytes", "-5", "Invalid value -5 for configuration log.segment.bytes: Value must be at least 14"},
		{"log.segment.bytes", "13", "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"},
		{"log.segment.bytes", "abc", "Invalid value abc for configuration log.segment.bytes: Not a number of type INT"},
		{"log.segment.bytes", "2147483648", "Invalid value 2147483648 for configuration log.segment.bytes: Not a number of type INT"},
		{"log.segment.bytes", "", "Invalid value  for configuration log.segment.bytes: Not a number of type INT"},
		{"retention.ms", "1.5", "Invalid value 1.5 for configuration retention.ms: Not a number of type LONG"},
		{"retention.ms", "-2", "Invalid value -2 for configuration retention.ms: Value must be at least -1"},
		{"auto.create.topics.enable", "yes", "Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"},
		{"compression.type", "brotli", "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"message.timestamp.type", "createtime", "Invalid value createtime for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime"},
		{"cleanup.policy", "delete,bogus", "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"},
		// Petrel's limits, in Kafka's wording.
		{"min.cleanable.dirty.ratio", "1.5", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1.0"},
		{"min.cleanable.dirty.ratio", "half", "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
		{"compression.gzip.level", "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.zstd.level", "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"},
	}
	for _, tt := range tests {
		def, ok := topicByName[tt.name]
		if !ok {
			def = brokerByName[tt.name]
		}
		err := CheckValue(def, tt.value)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s=%q: %v, expected %q", tt.name, tt.value, err, tt.want)
		}
	}
	// Accepted as Kafka accepts them: trimmed numbers, booleans in any case, every codec
	// and timestamp type, list elements with spaces.
	for name, value := range map[string]string{
		"log.segment.bytes": " 14 ", "auto.create.topics.enable": "TRUE", "delete.topic.enable": " False",
		"compression.type": "gzip", "cleanup.policy": " delete , delete", "retention.ms": "-1", "segment.bytes": "+1048576",
		"message.timestamp.type": "LogAppendTime", "log.message.timestamp.type": "LogAppendTime", "compression.zstd.level": "-131072",
		"log.retention.ms": "-5", // Kafka reads a negative broker retention as -1
	} {
		def, ok := topicByName[name]
		if !ok {
			def = brokerByName[name]
		}
		if err := CheckValue(def, value); err != nil {
			t.Errorf("%s=%q: %v, expected it accepted", name, value, err)
		}
	}
	// Petrel's limits on a property's values (no property of the table has one now): a
	// made-up property with each kind.
	limited := Def{Name: "made.up.codec", Type: TypeString, Validator: oneOf("a", "b"),
		Limit: &Limit{values: []string{"a"}, why: "b is not implemented yet"}}
	if err := CheckValue(limited, "b"); err == nil || err.Error() != "Invalid value b for configuration made.up.codec: Petrel supports only a (b is not implemented yet)" {
		t.Errorf("a limited value: %v", err)
	}
	limited.Limit = &Limit{values: []string{"a"}, why: "b is accepted and ignored", warnOnly: true}
	if err := CheckValue(limited, "b"); err != nil {
		t.Errorf("a warn-only limit refused: %v", err)
	}
	if w := LimitWarning(limited, "b"); !strings.Contains(w, "Petrel supports only a") {
		t.Errorf("made.up.codec=b warning %q", w)
	}
	if w := LimitWarning(limited, "a"); w != "" {
		t.Errorf("made.up.codec=a warning %q, expected none", w)
	}
	if w := LimitWarning(topicByName["compression.type"], "zstd"); w != "" {
		t.Errorf("compression.type=zstd warning %q, expected none: Petrel recompresses", w)
	}
}

// TestConfigDefs_DefaultsAreValid holds every default to its own type and validator,
// and every name to one row.
func TestConfigDefs_DefaultsAreValid(t *testing.T) {
	seen := map[string]bool{}
	for _, def := range BrokerDefs {
		if seen[def.Name] {
			t.Errorf("%s is defined twice", def.Name)
		}
		seen[def.Name] = true
	}
	for _, def := range allConfigDefs() {
		if def.Doc == "" {
			t.Errorf("%s has no documentation", def.Name)
		}
		if def.Default == "" && def.Type != TypeString && def.Type != TypeList {
			continue // Kafka's null
		}
		if err := CheckValue(def, def.Default); err != nil {
			t.Errorf("%s: default %q: %v", def.Name, def.Default, err)
		}
	}
	for _, def := range TopicDefs {
		if _, ok := brokerByName[def.BrokerSynonym]; !ok && def.BrokerSynonym != "" {
			t.Errorf("%s: broker synonym %q is not a broker property", def.Name, def.BrokerSynonym)
		}
	}
}

func TestValidateTopicConfig_Names(t *testing.T) {
	for name, want := range map[string]string{
		"no.such.config": "Unknown topic config name: no.such.config",
		"preallocate":    "Petrel does not implement topic config preallocate yet (segment files grow as written)",
	} {
		err := ValidateTopicConfig(name, "1")
		if err == nil || err.Error() != want || !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Errorf("%s: %v, expected %q as ErrInvalidConfig", name, err, want)
		}
	}
	if err := ValidateTopicConfig("retention.ms", strconv.Itoa(3600000)); err != nil {
		t.Error(err)
	}
}

// FuzzCheckConfigValue: any text, against every property, is accepted or refused with
// Kafka's wording as INVALID_CONFIG; never a panic. An accepted number reads back.
func FuzzCheckConfigValue(f *testing.F) {
	for _, s := range []string{"-5", "14", " 1 ", "abc", "", "true", "TRUE", "compact,delete", "delete, ", ",", "9223372036854775808", "producer"} {
		f.Add(s)
	}
	defs := allConfigDefs()
	f.Fuzz(func(t *testing.T, value string) {
		for _, def := range defs {
			err := CheckValue(def, value)
			if err != nil {
				if !errors.Is(err, metadata.ErrInvalidConfig) || !strings.HasPrefix(err.Error(), "Invalid value ") {
					t.Fatalf("%s=%q: %v", def.Name, value, err)
				}
				continue
			}
			if def.Type == TypeInt || def.Type == TypeLong {
				n := ParseInt64(value)
				if def.Type == TypeInt && (n < math.MinInt32 || n > math.MaxInt32) {
					t.Fatalf("%s=%q accepted as an INT", def.Name, value)
				}
				if def.Validator != nil && def.Validator.check(parsedValue{num: n}) != "" {
					t.Fatalf("%s=%q accepted outside its validator", def.Name, value)
				}
			}
		}
	})
}

// FuzzParseSet: a --set value is split at its first '=' only and kept otherwise whole.
func FuzzParseSet(f *testing.F) {
	for _, s := range []string{"a=b", "listeners=PLAINTEXT://a:1,SSL://b:2", "k=", "=v", "novalue", `j=x required u="a=b,c";`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		props := map[string]string{}
		err := ParseSet(props, []string{s})
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			if err == nil {
				t.Fatalf("ParseSet(%q) accepted %q", s, props)
			}
			return
		}
		if err != nil || len(props) != 1 || props[strings.TrimSpace(k)] != strings.TrimSpace(v) {
			t.Fatalf("ParseSet(%q) = %q, %v", s, props, err)
		}
	})
}
