package config

import "strings"

// Kafka's dynamic broker configs (DynamicBrokerConfig.AllDynamicConfigs of Kafka 4.x,
// and the broker quota configs of DynamicConfig.Broker): the properties that
// IncrementalAlterConfigs and AlterConfigs may change at run time, with Kafka's update
// mode — "per-broker" (a broker id must be named) or "cluster-wide" (also as the
// cluster default). Every other broker property is read-only, in Kafka and here.
// TestDynamicConfigsFollowKafka walks the property table against it.
var kafkaDynamicBrokerConfigs = map[string]string{
	// DynamicLogConfig's hour and minute forms of topic synonyms.
	"log.retention.hours":   "cluster-wide",
	"log.retention.minutes": "cluster-wide",
	"log.roll.hours":        "cluster-wide",
	// KIP-1066 (Kafka 4.3): read by the controller's replica placement.
	"cordoned.log.dirs": "per-broker",
	// LogCleaner.ReconfigurableConfigs.
	"log.cleaner.threads":                 "cluster-wide",
	"log.cleaner.dedupe.buffer.size":      "cluster-wide",
	"log.cleaner.io.buffer.load.factor":   "cluster-wide",
	"log.cleaner.io.buffer.size":          "cluster-wide",
	"log.cleaner.io.max.bytes.per.second": "cluster-wide",
	"log.cleaner.backoff.ms":              "cluster-wide",
	// DynamicThreadPool, and num.network.threads (a cluster-level listener config).
	"num.io.threads":                    "cluster-wide",
	"num.network.threads":               "cluster-wide",
	"num.replica.fetchers":              "cluster-wide",
	"num.recovery.threads.per.data.dir": "cluster-wide",
	"background.threads":                "cluster-wide",
	// Metrics reporters.
	"metric.reporters": "cluster-wide",
	// SocketServer.ReconfigurableConfigs.
	"max.connections":                  "cluster-wide",
	"max.connection.creation.rate":     "cluster-wide",
	"max.connections.per.ip":           "cluster-wide",
	"max.connections.per.ip.overrides": "cluster-wide",
	// DynamicProducerStateManagerConfig.
	"producer.id.expiration.ms":                 "cluster-wide",
	"transaction.partition.verification.enable": "cluster-wide",
	// DynamicListenerConfig (per broker).
	"listeners":                      "per-broker",
	"listener.security.protocol.map": "per-broker",
	// The broker's replication quotas (KIP-73).
	"leader.replication.throttled.rate":              "per-broker",
	"follower.replication.throttled.rate":            "per-broker",
	"replica.alter.log.dirs.io.max.bytes.per.second": "per-broker",
	"remote.log.manager.copy.max.bytes.per.second":   "cluster-wide",
	"remote.log.manager.fetch.max.bytes.per.second":  "cluster-wide",
	"remote.log.index.file.cache.total.size.bytes":   "cluster-wide",
	"remote.log.manager.copier.thread.pool.size":     "cluster-wide",
	"remote.log.manager.expiration.thread.pool.size": "cluster-wide",
	"remote.fetch.max.wait.ms":                       "cluster-wide",
	"remote.log.reader.threads":                      "cluster-wide",
	"config.providers":                               "cluster-wide",
	"remote.log.manager.follower.thread.pool.size":   "cluster-wide",
	// DynamicListenerConfig's security configs (per broker; the SSL ones only with a
	// listener.name.<l>. prefix, as Kafka requires).
	"principal.builder.class":                  "per-broker",
	"ssl.provider":                             "per-broker",
	"sasl.mechanism.inter.broker.protocol":     "per-broker",
	"sasl.enabled.mechanisms":                  "per-broker",
	"sasl.jaas.config":                         "per-broker",
	"sasl.kerberos.service.name":               "per-broker",
	"sasl.kerberos.kinit.cmd":                  "per-broker",
	"sasl.kerberos.ticket.renew.window.factor": "per-broker",
	"sasl.kerberos.ticket.renew.jitter":        "per-broker",
	"sasl.kerberos.min.time.before.relogin":    "per-broker",
	"sasl.kerberos.principal.to.local.rules":   "per-broker",
	"sasl.login.refresh.window.factor":         "per-broker",
	"sasl.login.refresh.window.jitter":         "per-broker",
	"sasl.login.refresh.min.period.seconds":    "per-broker",
	"sasl.login.refresh.buffer.seconds":        "per-broker",
	"ssl.keystore.type":                        "per-broker",
	"ssl.keystore.location":                    "per-broker",
	"ssl.keystore.password":                    "per-broker",
	"ssl.key.password":                         "per-broker",
	"ssl.keystore.key":                         "per-broker",
	"ssl.keystore.certificate.chain":           "per-broker",
	"ssl.truststore.type":                      "per-broker",
	"ssl.truststore.location":                  "per-broker",
	"ssl.truststore.password":                  "per-broker",
	"ssl.truststore.certificates":              "per-broker",
	"ssl.keymanager.algorithm":                 "per-broker",
	"ssl.trustmanager.algorithm":               "per-broker",
	"ssl.cipher.suites":                        "per-broker",
	"ssl.protocol":                             "per-broker",
	"ssl.enabled.protocols":                    "per-broker",
	"ssl.secure.random.implementation":         "per-broker",
	"ssl.client.auth":                          "per-broker",
	"ssl.endpoint.identification.algorithm":    "per-broker",
	"ssl.engine.factory.class":                 "per-broker",
}

// kafkaDynamic reports whether Kafka may change broker property name at run time: one
// of kafkaDynamicBrokerConfigs, a topic config's broker synonym (DynamicLogConfig), or
// a listener-prefixed form (listener.name.<l>.<property>) of a dynamic security config.
func kafkaDynamic(name string) bool {
	if _, ok := kafkaDynamicBrokerConfigs[name]; ok {
		return true
	}
	for _, d := range TopicDefs {
		if d.BrokerSynonym == name {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		if _, prop, ok := strings.Cut(rest, "."); ok {
			if _, p2, ok := strings.Cut(prop, "."); ok && strings.HasSuffix(p2, "sasl.jaas.config") {
				return true // listener.name.<l>.<mechanism>.sasl.jaas.config
			}
			return kafkaDynamicBrokerConfigs[prop] != ""
		}
	}
	return false
}
