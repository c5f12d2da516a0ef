package config

// Broker properties come from three places, in increasing precedence: a
// server.properties file (--config), PETREL_SET_ environment variables, and --set
// flags. Values are taken whole — commas, '=' and quotes included — so list properties
// (listeners, sasl.enabled.mechanisms, super.users, ...) and JAAS strings survive.

import (
	"errors"
	"fmt"
	"strings"

	"github.com/magiconair/properties"
)

// ErrInvalidBrokerConfig reports a bad flag or property.
var ErrInvalidBrokerConfig = errors.New("broker: invalid configuration")

// Where a property's value came from, as --print-config reports it.
const (
	SourceDefault     = "default"
	SourceConfigFile  = "config file"
	SourceEnvironment = "environment"
	SourceSet         = "--set"
	SourceDynamic     = "dynamic"
)

// EnvPrefix starts an environment variable that sets a broker property:
// PETREL_SET_LOG_RETENTION_HOURS=1 is log.retention.hours=1. After the prefix, as in
// Apache Kafka's Docker image: '_' is '.', '__' is '_', '___' is '-', and the name is
// lower-cased.
const EnvPrefix = "PETREL_SET_"

// LoadProperties reads a server.properties file (Java properties syntax). ${...} is kept
// as written (Kafka does not expand it either). A key given twice keeps its last value.
func LoadProperties(path string) (map[string]string, error) {
	l := properties.Loader{Encoding: properties.UTF8, DisableExpansion: true}
	p, err := l.LoadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidBrokerConfig, err)
	}
	return p.Map(), nil
}

// ParseSet parses repeated --set key=value flags into props. The value is everything
// after the first '=', kept whole; the key and the value's ends are trimmed. An empty
// value is a value (Kafka then refuses it for numbers). A key given twice keeps its last
// value, as in a properties file.
func ParseSet(props map[string]string, sets []string) error {
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return fmt.Errorf("%w: --set %q is not key=value", ErrInvalidBrokerConfig, s)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

// EnvProperties returns the broker properties set by PETREL_SET_ variables in environ
// (os.Environ's form, KEY=value).
func EnvProperties(environ []string) (map[string]string, error) {
	props := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, EnvPrefix) {
			continue
		}
		name := EnvPropertyName(strings.TrimPrefix(k, EnvPrefix))
		if name == "" || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") {
			return nil, fmt.Errorf("%w: environment variable %s does not name a property", ErrInvalidBrokerConfig, k)
		}
		props[name] = strings.TrimSpace(v)
	}
	return props, nil
}

// EnvPropertyName turns the part of a variable after PETREL_SET_ into a property name.
func EnvPropertyName(s string) string {
	s = strings.ToLower(s)
	s = strings.ReplaceAll(s, "___", "\x00")
	s = strings.ReplaceAll(s, "__", "\x01")
	s = strings.ReplaceAll(s, "_", ".")
	s = strings.ReplaceAll(s, "\x01", "_")
	return strings.ReplaceAll(s, "\x00", "-")
}

// GatherProperties reads the broker properties of a node: the file (none when empty),
// then the environment, then the --set flags, each overriding the one before. It returns
// the properties and, for each, its source (SourceConfigFile, SourceEnvironment,
// SourceSet).
func GatherProperties(file string, environ, sets []string) (props, sources map[string]string, err error) {
	props, sources = map[string]string{}, map[string]string{}
	add := func(m map[string]string, source string) {
		for k, v := range m {
			props[k], sources[k] = v, source
		}
	}
	if file != "" {
		m, err := LoadProperties(file)
		if err != nil {
			return nil, nil, err
		}
		add(m, SourceConfigFile)
	}
	env, err := EnvProperties(environ)
	if err != nil {
		return nil, nil, err
	}
	add(env, SourceEnvironment)
	set := map[string]string{}
	if err := ParseSet(set, sets); err != nil {
		return nil, nil, err
	}
	add(set, SourceSet)
	return props, sources, nil
}
