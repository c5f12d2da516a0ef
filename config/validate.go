package config

// Property values are parsed and validated here, the same way for every source: a
// server.properties file, PETREL_SET_ environment variables, --set flags and the topic
// configs of CreateTopics. Parsing follows Kafka's ConfigDef (values trimmed; booleans
// true or false in any case; lists split at commas) and refusals carry Kafka's
// ConfigException wording: "Invalid value V for configuration N: reason".

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/metadata"
)

// InvalidConfigError is a refused configuration whose text is exactly Kafka's message;
// it matches metadata.ErrInvalidConfig, so it travels as INVALID_CONFIG.
type InvalidConfigError string

func (e InvalidConfigError) Error() string        { return string(e) }
func (e InvalidConfigError) Is(target error) bool { return target == metadata.ErrInvalidConfig }

// configException is Kafka's ConfigException(name, value, message); a secret's value
// shows as "[hidden]".
func configException(name, value, message string) error {
	return InvalidConfigError(fmt.Sprintf("Invalid value %s for configuration %s: %s", Shown(name, value), name, message))
}

// parsedValue is a property value parsed by its type.
type parsedValue struct {
	str  string   // the trimmed text
	num  int64    // TypeInt, TypeLong
	f    float64  // TypeDouble
	list []string // TypeList
}

// Validator is a Kafka ConfigDef validator on a parsed value. check returns Kafka's
// reason for refusing it, or "" when the value is valid; String is its "Valid Values"
// text in Kafka's documentation.
type Validator interface {
	check(v parsedValue) string
	String() string
}

// rangeValidator is ConfigDef.Range: atLeast(min) or between(min, max).
type rangeValidator struct {
	min, max       int64
	hasMin, hasMax bool
}

// atLeast is ConfigDef.Range.atLeast.
func atLeast(min int64) Validator { return rangeValidator{min: min, hasMin: true} }

// betweenDouble is ConfigDef.Range.between on a DOUBLE.
func betweenDouble(min, max float64) Validator { return doubleRange{min, max} }

type doubleRange struct{ min, max float64 }

func (r doubleRange) check(v parsedValue) string {
	if v.f < r.min {
		return "Value must be at least " + javaDouble(r.min)
	}
	if v.f > r.max {
		return "Value must be no more than " + javaDouble(r.max)
	}
	return ""
}

func (r doubleRange) String() string {
	return "[" + javaDouble(r.min) + ",...," + javaDouble(r.max) + "]"
}

// javaDouble formats f as Java's Double.toString does for ordinary values (1 → "1.0").
func javaDouble(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// between is ConfigDef.Range.between.
func between(min, max int64) Validator {
	return rangeValidator{min: min, max: max, hasMin: true, hasMax: true}
}

func (r rangeValidator) check(v parsedValue) string {
	if r.hasMin && v.num < r.min {
		return fmt.Sprintf("Value must be at least %d", r.min)
	}
	if r.hasMax && v.num > r.max {
		return fmt.Sprintf("Value must be no more than %d", r.max)
	}
	return ""
}

func (r rangeValidator) String() string {
	switch {
	case r.hasMin && r.hasMax:
		return fmt.Sprintf("[%d,...,%d]", r.min, r.max)
	case r.hasMin:
		return fmt.Sprintf("[%d,...]", r.min)
	case r.hasMax:
		return fmt.Sprintf("[...,%d]", r.max)
	}
	return "[...]"
}

// betweenOr is Kafka's GzipCompression.LevelValidator: min..max, or exactly or.
func betweenOr(min, max, or int64) Validator { return rangeOrValidator{min, max, or} }

type rangeOrValidator struct{ min, max, or int64 }

func (r rangeOrValidator) check(v parsedValue) string {
	if v.num > r.max || v.num < r.min && v.num != r.or {
		return fmt.Sprintf("Value must be between %d and %d or equal to %d", r.min, r.max, r.or)
	}
	return ""
}

func (r rangeOrValidator) String() string {
	return fmt.Sprintf("[%d,...,%d] or %d", r.min, r.max, r.or)
}

// stringValidator is ConfigDef.ValidString.in: one of a fixed set, case-sensitive.
type stringValidator []string

func oneOf(values ...string) Validator { return stringValidator(values) }

func (s stringValidator) check(v parsedValue) string {
	if slices.Contains(s, v.str) {
		return ""
	}
	return "String must be one of: " + strings.Join(s, ", ")
}

func (s stringValidator) String() string { return "[" + strings.Join(s, ", ") + "]" }

// listValidator is ConfigDef.ValidList.in: every element one of a fixed set.
type listValidator []string

func listOf(values ...string) Validator { return listValidator(values) }

func (l listValidator) check(v parsedValue) string {
	for _, e := range v.list {
		if !slices.Contains(l, e) {
			return "String must be one of: " + strings.Join(l, ", ")
		}
	}
	return ""
}

func (l listValidator) String() string { return "[" + strings.Join(l, ", ") + "]" }

// Limit narrows a Kafka property to the values Petrel implements. A value outside
// it is refused (or, with warnOnly, accepted with a warning) in Kafka's wording.
type Limit struct {
	values   []string // the values Petrel implements; each list element must be one
	why      string   // what is missing, e.g. "log compaction is not implemented yet"
	warnOnly bool     // accept other values, but warn that Petrel does not act on them
}

func (l *Limit) check(def Def, v parsedValue) error {
	if l == nil {
		return nil
	}
	elems := []string{v.str}
	if def.Type == TypeList {
		elems = v.list
	}
	for _, e := range elems {
		if !slices.ContainsFunc(l.values, func(ok string) bool { return ok == e || (def.Type == TypeBoolean && strings.EqualFold(ok, e)) }) {
			return configException(def.Name, elemOr(e, v.str), fmt.Sprintf("Petrel supports only %s (%s)", strings.Join(l.values, ", "), l.why))
		}
	}
	if len(elems) == 0 {
		return configException(def.Name, v.str, fmt.Sprintf("Petrel supports only %s (%s)", strings.Join(l.values, ", "), l.why))
	}
	return nil
}

func elemOr(elem, whole string) string {
	if elem == "" {
		return whole
	}
	return elem
}

// parseConfigValue parses value as def's type and runs def's validator, as Kafka's
// ConfigDef.parseValue does. It does not apply Petrel's limit.
func parseConfigValue(def Def, value string) (parsedValue, error) {
	v := parsedValue{str: strings.TrimSpace(value)}
	switch def.Type {
	case TypeBoolean:
		if !strings.EqualFold(v.str, "true") && !strings.EqualFold(v.str, "false") {
			return v, configException(def.Name, value, "Expected value to be either true or false")
		}
	case TypeInt:
		n, err := strconv.ParseInt(v.str, 10, 32)
		if err != nil {
			return v, configException(def.Name, value, "Not a number of type INT")
		}
		v.num = n
	case TypeLong:
		n, err := strconv.ParseInt(v.str, 10, 64)
		if err != nil {
			return v, configException(def.Name, value, "Not a number of type LONG")
		}
		v.num = n
	case TypeDouble:
		f, err := strconv.ParseFloat(v.str, 64)
		if err != nil {
			return v, configException(def.Name, value, "Not a number of type DOUBLE")
		}
		v.f = f
	case TypeList:
		if v.str != "" {
			v.list = strings.Split(v.str, ",")
			for i := range v.list {
				v.list[i] = strings.TrimSpace(v.list[i])
			}
		}
	}
	if def.Validator != nil {
		if msg := def.Validator.check(v); msg != "" {
			shown := value
			if def.Type == TypeList {
				// ValidList names the offending element, as Kafka does.
				for _, e := range v.list {
					if def.Validator.check(parsedValue{list: []string{e}}) != "" {
						shown = e
						break
					}
				}
			}
			return v, configException(def.Name, shown, msg)
		}
	}
	return v, nil
}

// CheckValue checks value against def's type, Kafka's validator and Petrel's
// limit. A warn-only limit does not refuse; LimitWarning reports it.
func CheckValue(def Def, value string) error {
	v, err := parseConfigValue(def, value)
	if err != nil {
		return err
	}
	if def.Limit != nil && !def.Limit.warnOnly {
		return def.Limit.check(def, v)
	}
	return nil
}

// LimitWarning returns the warning for a valid value that Petrel accepts but does not
// act on (a warn-only limit), or "".
func LimitWarning(def Def, value string) string {
	if def.Limit == nil || !def.Limit.warnOnly {
		return ""
	}
	v, err := parseConfigValue(def, value)
	if err != nil {
		return ""
	}
	if err := def.Limit.check(def, v); err != nil {
		return err.Error()
	}
	return ""
}

// ValidateTopicConfig checks one topic config as CreateTopics (and later the configs
// APIs) carry it: the name must be a topic config Petrel implements, and the value must
// pass its type, validator and limit. The error's text is Kafka's message.
func ValidateTopicConfig(name, value string) error {
	def, ok := topicByName[name]
	if !ok {
		if u, known := unimplementedTopicConfig(name); known {
			return InvalidConfigError(fmt.Sprintf("Petrel does not implement topic config %s yet (%s)", name, u.Note))
		}
		return InvalidConfigError("Unknown topic config name: " + name)
	}
	return CheckValue(def, value)
}

// ParseBool is Kafka's boolean parse; call it only on validated values.
func ParseBool(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// ParseInt64 parses a validated INT or LONG value.
func ParseInt64(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}
