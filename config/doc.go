// Package config is Kafka's property table as Petrel implements it: every broker
// property and topic config with its type (PASSWORD ones are secrets), default,
// validator, documentation, dynamic update mode and read-only flag; Kafka's dynamic
// broker config table; value parsing and validation with Kafka's ConfigException
// wording; the sources of a node's properties (server.properties, PETREL_SET_
// variables, --set); and the rules that print a secret as "[hidden]". It is pure: the
// broker resolves and applies configs against its metadata image, the CLI reads
// property files, and docs/configuration.md is generated from the table
// (TestConfigurationDoc).
package config
