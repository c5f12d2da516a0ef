// Package config is Kafka's property table as Petrel implements it: every broker
// property and topic config with its type (PASSWORD ones are secrets), default,
// validator, documentation, dynamic update mode and read-only flag; Kafka's dynamic
// broker config table; value parsing and validation with Kafka's ConfigException
// wording; the sources of a node's properties (server.properties, PETREL_SET_
// variables, --set); the rules that print a secret as "[hidden]"; and the resolution of a
// value through Kafka's layers (resolve.go: the topic override, the dynamic broker
// configs of the metadata image, the supplied property, the default), config changes as
// metadata records (changes.go), the effective properties (effective.go), and the one
// listener rule over listeners, advertised.listeners and the security protocol map
// (listener_rule.go, listeners.go). It is
// pure: the broker applies what it resolves, the CLI reads property files, and
// docs/configuration.md is generated from the table (TestConfigurationDoc).
package config
