package config

import "strings"

// Secrets in the property table. A property of Kafka's PASSWORD type (TypePassword)
// never leaves the broker: DescribeConfigs answers it with is_sensitive=true and a null
// value for every principal, and everything that prints properties — --print-config,
// config warnings and errors, the CLI — shows hiddenValue instead. A name outside the
// table (a property Petrel does not implement, a typo) is treated as a secret when it
// looks like one (secretLikeName), so an unknown secret is never printed either.
// TestEverySecretPropertyIsPassword keeps the table honest.

// hiddenValue is what is shown in place of a secret, as Kafka's Password.toString.
const hiddenValue = "[hidden]"

// Sensitive reports whether name's value is a secret: a PASSWORD-type
// property of the table (listener-prefixed ones included) or, for a name outside the
// table, one that looks like a secret.
func Sensitive(name string) bool {
	if def, ok := brokerByName[name]; ok {
		return def.Type == TypePassword
	}
	if def, ok := ListenerPropertyDef(name); ok {
		return def.Type == TypePassword
	}
	if def, ok := topicByName[name]; ok {
		return def.Type == TypePassword
	}
	return secretLikeName(name)
}

// secretLikeName reports names that Kafka's PASSWORD properties have in common:
// passwords, keys, secrets, JAAS configurations, inline certificates and credentials.
func secretLikeName(name string) bool {
	for _, s := range []string{"password", "jaas.config", "secret", "credential", "certificate", "token"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return strings.HasSuffix(name, ".key")
}

// Shown is value as it may be printed for property name.
func Shown(name, value string) string {
	if Sensitive(name) {
		return hiddenValue
	}
	return value
}
