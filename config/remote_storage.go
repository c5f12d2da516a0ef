package config

import "strings"

// ValidateTopicConfigs checks a topic's resulting configs (those set; the others take
// their defaults) against the rules of Kafka's LogConfig.validate that span several
// configs and the broker properties props of the node that decides (the controller):
// remote.storage.enable=true needs remote.log.storage.system.enable=true, and a
// cleanup.policy without compact (the topic's, else props' log.cleanup.policy). The error is INVALID_CONFIG with Kafka's message.
func ValidateTopicConfigs(configs, props map[string]string) error {
	if !ParseBool(configs["remote.storage.enable"]) {
		return nil
	}
	if v, _ := BrokerValue(props, "remote.log.storage.system.enable"); !ParseBool(v) {
		return InvalidConfigError("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	policy, set := configs["cleanup.policy"]
	if !set { // the topic takes the broker's log.cleanup.policy (Kafka's LogConfig.validate merges them)
		def, _ := TopicDef("cleanup.policy")
		policy = resolveStatic(def, props).Value
	}
	if strings.Contains(policy, "compact") {
		return InvalidConfigError("Remote log storage is unsupported for the compacted topics")
	}
	return nil
}

// ValidateRemoteStorageChange checks an alteration of a topic's configs from before to
// after (the configs set) by Kafka's rule for turning tiered storage off
// (LogConfig.validateTurningOffRemoteStorageWithDelete, KIP-950): remote.storage.enable
// may go from true to false only with remote.log.delete.on.disable=true, which deletes
// the topic's remote data; remote.storage.enable=true with remote.log.copy.disable=true
// keeps it read-only instead. The error is INVALID_CONFIG with Kafka's message.
func ValidateRemoteStorageChange(before, after map[string]string) error {
	if !ParseBool(before["remote.storage.enable"]) || ParseBool(after["remote.storage.enable"]) ||
		ParseBool(after["remote.log.delete.on.disable"]) {
		return nil
	}
	return InvalidConfigError("It is invalid to disable remote storage without deleting remote data. " +
		"If you want to keep the remote data and turn to read only, please set `remote.storage.enable=true,remote.log.copy.disable=true`. " +
		"If you want to disable remote storage and delete all remote data, please set `remote.storage.enable=false,remote.log.delete.on.disable=true`.")
}
