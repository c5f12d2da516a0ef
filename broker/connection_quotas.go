package broker

// Connection limits (rpc.ConnectionQuotas, Kafka's ConnectionQuotas) as the broker's
// properties set them: max.connections, max.connections.per.ip and its overrides read
// from the current image at every accept, listener.name.<listener>.max.connections at
// start.

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/rpc"
)

// connectionQuotaConfig reads the connection limits of the broker's listeners; inter is
// the inter-broker listener. Kafka refuses max.connections.per.ip=0 without overrides:
// no client could ever connect.
func (b *Broker) connectionQuotaConfig(specs []config.ListenerSpec, inter string) (rpc.ConnectionQuotaConfig, error) {
	if v, _ := b.cfg.brokerValue("max.connections.per.ip"); config.ParseInt64(v) == 0 {
		if o, _ := b.cfg.brokerValue("max.connections.per.ip.overrides"); strings.TrimSpace(o) == "" {
			return rpc.ConnectionQuotaConfig{}, fmt.Errorf("%w: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set", config.ErrInvalidBrokerConfig)
		}
	}
	qc := rpc.ConnectionQuotaConfig{InterBroker: inter, Protected: len(specs) > 1, ListenerMax: map[string]int{},
		Settings: func() rpc.ConnectionSettings {
			im := b.Image()
			return rpc.ConnectionSettings{
				MaxConnections: intSetting(b.dynamicBrokerValue(im, "max.connections")),
				PerIP:          intSetting(b.dynamicBrokerValue(im, "max.connections.per.ip")),
				PerIPOverrides: b.dynamicBrokerValue(im, "max.connections.per.ip.overrides"),
			}
		},
		Changed: b.machine.Changed, ParseOverrides: config.ParseConnectionOverrides, Logger: b.logger.Named("connections")}
	for _, s := range specs {
		if v, ok := b.cfg.Properties["listener.name."+strings.ToLower(s.Name)+".max.connections"]; ok {
			qc.ListenerMax[s.Name] = intSetting(v)
		}
	}
	return qc, nil
}

// intSetting parses a validated INT property; an unparsable value is no limit.
func intSetting(v string) int {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return math.MaxInt32
	}
	return int(n)
}
