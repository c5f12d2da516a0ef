package cli

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// configsCommand is `petrel configs describe|alter`, shaped like kafka-configs.sh:
// topics, brokers (one broker, or the cluster-wide default with --entity-default) and
// consumer groups (KIP-848 group configs, configs_groups.go); alter uses
// IncrementalAlterConfigs (SET and DELETE).
func configsCommand() *ucli.Command {
	entityFlags := func(extra ...ucli.Flag) []ucli.Flag {
		return clientcmd.WithFlags(append([]ucli.Flag{
			&ucli.StringFlag{Name: "entity-type", Usage: "topics, brokers, groups (consumer group configs), or users (SCRAM credentials); or give --topic or --broker"},
			&ucli.StringFlag{Name: "entity-name", Usage: "the topic name, broker id or group id"},
			&ucli.BoolFlag{Name: "entity-default", Usage: "the cluster-wide default broker configs"},
			&ucli.StringFlag{Name: "topic", Usage: "a topic: --entity-type topics --entity-name TOPIC, as kafka-configs.sh"},
			&ucli.StringFlag{Name: "broker", Usage: "a broker id: --entity-type brokers --entity-name ID, as kafka-configs.sh"},
			&ucli.BoolFlag{Name: "broker-defaults", Usage: "the cluster-wide default: --entity-type brokers --entity-default, as kafka-configs.sh"},
		}, extra...)...)
	}
	return &ucli.Command{
		Name:  "configs",
		Usage: "describe and alter topic, broker and consumer group configs, as kafka-configs.sh",
		Subcommands: []*ucli.Command{
			{
				Name:   "describe",
				Usage:  "list the dynamic configs of a topic, broker or group (every config with --all)",
				Flags:  entityFlags(&ucli.BoolFlag{Name: "all", Usage: "list every config, not only the dynamic ones"}, outputFlag()),
				Action: runConfigsDescribe,
			},
			{
				Name:  "alter",
				Usage: "set and delete dynamic configs; they take effect without a restart",
				Flags: entityFlags(
					&ucli.StringFlag{Name: "add-config", Usage: "configs to set: k1=v1,k2=[v1,v2],..."},
					&ucli.StringFlag{Name: "delete-config", Usage: "configs to delete: k1,k2,..."},
				),
				Action: runConfigsAlter,
			},
		},
	}
}

// configEntity is the resource a configs command names.
type configEntity struct {
	topic       bool   // a topic
	group       bool   // a consumer group; neither: a broker
	name        string // topic name, broker id or group id; "" with isDefault
	isDefault   bool   // the cluster-wide broker default
	brokerID    int32
	describeAll bool // no name: every topic or broker
}

// entityShortcuts maps kafka-configs.sh's --topic, --broker and --broker-defaults onto
// --entity-type, --entity-name and --entity-default.
func entityShortcuts(c *ucli.Context) error {
	var given []string
	for _, name := range []string{"topic", "broker", "broker-defaults"} {
		if c.IsSet(name) {
			given = append(given, "--"+name)
		}
	}
	switch {
	case len(given) > 1:
		return fmt.Errorf("give one of %s", strings.Join(given, ", "))
	case len(given) == 1 && (c.IsSet("entity-type") || c.IsSet("entity-name") || c.IsSet("entity-default")):
		return fmt.Errorf("%s cannot be used with --entity-type, --entity-name or --entity-default", given[0])
	case c.IsSet("topic"):
		return setAll(c, "entity-type", "topics", "entity-name", c.String("topic"))
	case c.IsSet("broker"):
		return setAll(c, "entity-type", "brokers", "entity-name", c.String("broker"))
	case c.IsSet("broker-defaults"):
		return setAll(c, "entity-type", "brokers", "entity-default", "true")
	case !c.IsSet("entity-type"):
		return errors.New("required flag --entity-type not set (or give --topic, --broker or --broker-defaults)")
	}
	return nil
}

// setAll sets flags from name, value pairs.
func setAll(c *ucli.Context, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := c.Set(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

func parseConfigEntity(c *ucli.Context) (configEntity, error) {
	var e configEntity
	switch c.String("entity-type") {
	case "topics", "topic":
		e.topic = true
	case "groups", "group":
		e.group = true
	case "brokers", "broker":
	default:
		return e, fmt.Errorf("--entity-type must be topics, brokers, groups or users, got %q", c.String("entity-type"))
	}
	e.name, e.isDefault = c.String("entity-name"), c.Bool("entity-default")
	switch {
	case e.name != "" && e.isDefault:
		return e, errors.New("--entity-name and --entity-default cannot be used together")
	case e.isDefault && (e.topic || e.group):
		return e, errors.New("--entity-default applies to brokers only")
	case e.name == "" && !e.isDefault:
		e.describeAll = true
	case !e.topic && !e.group && e.name != "":
		id, err := strconv.ParseInt(e.name, 10, 32)
		if err != nil || id < 0 {
			return e, fmt.Errorf("the entity name for brokers must be a broker id, got %q", e.name)
		}
		e.brokerID = int32(id)
	}
	return e, nil
}

func (e configEntity) describeHeader(all bool) string {
	kind := "Dynamic"
	if all {
		kind = "All"
	}
	switch {
	case e.isDefault:
		return "Default configs for brokers in the cluster are:"
	case e.topic:
		return fmt.Sprintf("%s configs for topic %s are:", kind, e.name)
	case e.group:
		return fmt.Sprintf("%s configs for group %s are:", kind, e.name)
	}
	return fmt.Sprintf("%s configs for broker %s are:", kind, e.name)
}

func runConfigsDescribe(c *ucli.Context) error {
	asJSON, err := parseOutputArgs(c)
	if err != nil {
		return err
	}
	if err := entityShortcuts(c); err != nil {
		return err
	}
	if handled, err := scramViaConfigs(c, false); handled {
		return err
	}
	e, err := parseConfigEntity(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	var entities []configEntity
	if e.describeAll {
		md, err := adm.Metadata(ctx)
		if err != nil {
			return fmt.Errorf("list entities: %w", cl.Explain(err))
		}
		switch {
		case e.group:
			ids, err := listGroupIDs(ctx, adm)
			if err != nil {
				return fmt.Errorf("list groups: %w", cl.Explain(err))
			}
			for _, id := range ids {
				entities = append(entities, configEntity{group: true, name: id})
			}
		case e.topic:
			for _, name := range md.Topics.Names() {
				entities = append(entities, configEntity{topic: true, name: name})
			}
		default:
			for _, b := range md.Brokers {
				entities = append(entities, configEntity{name: strconv.Itoa(int(b.NodeID)), brokerID: b.NodeID})
			}
			entities = append(entities, configEntity{isDefault: true})
		}
	} else {
		entities = []configEntity{e}
	}
	var out strings.Builder
	resources := []configResourceJSON{}
	for _, ent := range entities {
		var rcs kadm.ResourceConfigs
		switch {
		case ent.topic:
			rcs, err = adm.DescribeTopicConfigs(ctx, ent.name)
		case ent.group:
			rcs, err = describeGroupConfigs(ctx, cl.Client, ent.name)
		case ent.isDefault:
			rcs, err = adm.DescribeBrokerConfigs(ctx)
		default:
			rcs, err = adm.DescribeBrokerConfigs(ctx, ent.brokerID)
		}
		if err != nil {
			return fmt.Errorf("describe configs: %w", cl.Explain(err))
		}
		if len(rcs) != 1 {
			return fmt.Errorf("describe configs: the broker answered %d resources", len(rcs))
		}
		if rc := rcs[0]; rc.Err != nil {
			if errors.Is(rc.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("topic %q does not exist", ent.name)
			}
			return fmt.Errorf("describe configs of %s: %w", ent.name, kafkaError(rc.Err, rc.ErrMessage))
		}
		out.WriteString(ent.describeHeader(c.Bool("all")) + "\n")
		want := kmsg.ConfigSourceDynamicTopicConfig
		switch {
		case ent.isDefault:
			want = kmsg.ConfigSourceDynamicDefaultBrokerConfig
		case ent.group:
			want = kmsg.ConfigSourceGroupConfig
		case !ent.topic:
			want = kmsg.ConfigSourceDynamicBrokerConfig
		}
		configs := rcs[0].Configs
		sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
		res := configResourceJSON{EntityType: "brokers", EntityName: &ent.name, Configs: []configJSON{}}
		switch {
		case ent.topic:
			res.EntityType = "topics"
		case ent.group:
			res.EntityType = "groups"
		case ent.isDefault:
			res.EntityName = nil
		}
		for _, cfg := range configs {
			if !c.Bool("all") && cfg.Source != want {
				continue
			}
			out.WriteString("  " + formatConfigEntry(cfg) + "\n")
			res.Configs = append(res.Configs, configEntryJSON(cfg))
		}
		resources = append(resources, res)
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Resources []configResourceJSON `json:"resources"`
		}{resources})
	}
	_, err = fmt.Fprint(c.App.Writer, out.String())
	return err
}

// configResourceJSON is one resource of `configs describe -o json`.
type configResourceJSON struct {
	EntityType string       `json:"entity_type"` // topics, brokers or groups
	EntityName *string      `json:"entity_name"` // null: the cluster-wide broker default
	Configs    []configJSON `json:"configs"`
}

// configJSON is one config: its value (null when sensitive or unset), where the value
// comes from (Kafka's source names, DYNAMIC_TOPIC_CONFIG ...) and its synonyms in
// order of precedence.
type configJSON struct {
	Name      string          `json:"name"`
	Value     *string         `json:"value"`
	Source    string          `json:"source"`
	Sensitive bool            `json:"sensitive"`
	Synonyms  []configSynonym `json:"synonyms"`
}

type configSynonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

func configEntryJSON(cfg kadm.Config) configJSON {
	out := configJSON{Name: cfg.Key, Value: cfg.Value, Source: cfg.Source.String(), Sensitive: cfg.Sensitive, Synonyms: []configSynonym{}}
	for _, s := range cfg.Synonyms {
		out.Synonyms = append(out.Synonyms, configSynonym{Name: s.Key, Value: s.Value, Source: s.Source.String()})
	}
	return out
}

// formatConfigEntry is kafka-configs.sh's line: k=v sensitive=false synonyms={...}.
func formatConfigEntry(cfg kadm.Config) string {
	var syn []string
	for _, s := range cfg.Synonyms {
		syn = append(syn, fmt.Sprintf("%s:%s=%s", s.Source, s.Key, derefString(s.Value)))
	}
	return fmt.Sprintf("%s=%s sensitive=%t synonyms={%s}", cfg.Key, derefString(cfg.Value), cfg.Sensitive, strings.Join(syn, ", "))
}

func runConfigsAlter(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	if err := entityShortcuts(c); err != nil {
		return err
	}
	if handled, err := scramViaConfigs(c, true); handled {
		return err
	}
	e, err := parseConfigEntity(c)
	if err != nil {
		return err
	}
	if e.describeAll {
		return errors.New("alter needs --entity-name or --entity-default")
	}
	adds, err := parseAddConfig(c.String("add-config"))
	if err != nil {
		return err
	}
	var alters []kadm.AlterConfig
	for _, kv := range adds {
		v := kv[1]
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: kv[0], Value: &v})
	}
	for _, k := range strings.Split(c.String("delete-config"), ",") {
		if k = strings.TrimSpace(k); k != "" {
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
	}
	if len(alters) == 0 {
		return errors.New("alter needs --add-config or --delete-config")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	adm := cl.Admin()
	var resp kadm.AlterConfigsResponses
	switch {
	case e.topic:
		resp, err = adm.AlterTopicConfigs(ctx, alters, e.name)
	case e.group:
		resp, err = alterGroupConfigs(ctx, cl.Client, alters, e.name)
	case e.isDefault:
		resp, err = adm.AlterBrokerConfigs(ctx, alters)
	default:
		resp, err = adm.AlterBrokerConfigs(ctx, alters, e.brokerID)
	}
	if err != nil {
		return fmt.Errorf("alter configs: %w", cl.Explain(err))
	}
	for _, r := range resp {
		if r.Err != nil {
			if errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return fmt.Errorf("topic %q does not exist", e.name)
			}
			return fmt.Errorf("alter configs: %w", kafkaError(r.Err, r.ErrMessage))
		}
	}
	msg := fmt.Sprintf("Completed updating config for broker %s.", e.name)
	switch {
	case e.topic:
		msg = fmt.Sprintf("Completed updating config for topic %s.", e.name)
	case e.group:
		msg = fmt.Sprintf("Completed updating config for group %s.", e.name)
	case e.isDefault:
		msg = "Completed updating default config for brokers in the cluster."
	}
	_, err = fmt.Fprintln(c.App.Writer, msg)
	return err
}

// parseAddConfig parses kafka-configs.sh's --add-config: k=v pairs separated by
// commas, where a value holding commas is written in square brackets (k=[a,b]).
func parseAddConfig(s string) ([][2]string, error) {
	var out [][2]string
	for len(strings.TrimSpace(s)) > 0 {
		s = strings.TrimLeft(s, " ,")
		k, rest, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("bad --add-config %q: want k1=v1,k2=[v1,v2]", s)
		}
		var v string
		if strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return nil, fmt.Errorf("bad --add-config: unclosed [ in the value of %s", k)
			}
			v, s = rest[1:end], rest[end+1:]
		} else {
			v, s, _ = strings.Cut(rest, ",")
		}
		out = append(out, [2]string{k, strings.TrimSpace(v)})
	}
	return out, nil
}
