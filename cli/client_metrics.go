package cli

// `petrel client-metrics`: client metrics subscriptions (KIP-714, the CLIENT_METRICS
// config resource) in the shape of Kafka's kafka-client-metrics.sh
// (ClientMetricsCommand): list, describe, alter (--metrics, --interval, --match,
// --generate-name) and delete, with its messages. Each is a plain Kafka admin request,
// so it works against Apache Kafka 3.7+ too.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

func clientMetricsCommand() *ucli.Command {
	name := &ucli.StringFlag{Name: "name", Usage: "the subscription's name"}
	return &ucli.Command{
		Name:  "client-metrics",
		Usage: "list, describe, alter and delete client metrics subscriptions (KIP-714), as kafka-client-metrics.sh",
		Subcommands: []*ucli.Command{
			{
				Name:   "list",
				Usage:  "list the subscriptions' names, one per line",
				Flags:  withOutputFlags(),
				Action: runClientMetricsList,
			},
			{
				Name:   "describe",
				Usage:  "describe a subscription (--name), or every one",
				Flags:  withOutputFlags(name),
				Action: runClientMetricsDescribe,
			},
			{
				Name:  "alter",
				Usage: "create or change a subscription: the metrics to ask for, how often, of which clients",
				Flags: clientcmd.WithFlags(name,
					&ucli.BoolFlag{Name: "generate-name", Usage: "name the subscription with a random id"},
					&ucli.StringFlag{Name: "metrics", Usage: "comma-separated metric name prefixes (* for every metric)"},
					&ucli.StringFlag{Name: "interval", Usage: "the push interval in milliseconds (100 to 3600000)"},
					&ucli.StringFlag{Name: "match", Usage: "comma-separated selector=regex patterns a client must all match: client_id, client_instance_id, client_software_name, client_software_version, client_source_address, client_source_port"},
				),
				Action: runClientMetricsAlter,
			},
			{
				Name:   "delete",
				Usage:  "delete a subscription",
				Flags:  clientcmd.WithFlags(name),
				Action: runClientMetricsDelete,
			},
		},
	}
}

// listClientMetrics is ListConfigResources of the CLIENT_METRICS type, names sorted.
func listClientMetrics(ctx context.Context, cl *kgo.Client) ([]string, error) {
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeClientMetrics)}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	var names []string
	for _, r := range resp.ConfigResources {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names, nil
}

func runClientMetricsList(c *ucli.Context) error {
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	names, err := listClientMetrics(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("list client metrics: %w", cl.Explain(err))
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Subscriptions []string `json:"subscriptions"`
		}{append([]string{}, names...)})
	}
	for _, n := range names {
		fmt.Fprintln(c.App.Writer, n)
	}
	return nil
}

// describedClientMetrics is one subscription in describe's -o json: its own configs
// (metrics, interval.ms, match); none when it does not exist.
type describedClientMetrics struct {
	Name    string            `json:"name"`
	Configs map[string]string `json:"configs"`
}

func runClientMetricsDescribe(c *ucli.Context) error {
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	names := []string{c.String("name")}
	if names[0] == "" {
		if names, err = listClientMetrics(ctx, cl.Client); err != nil {
			return fmt.Errorf("list client metrics: %w", cl.Explain(err))
		}
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, n := range names {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeClientMetrics, n
		req.Resources = append(req.Resources, res)
	}
	if len(req.Resources) == 0 {
		if asJSON {
			return writeJSON(c.App.Writer, struct {
				Subscriptions []describedClientMetrics `json:"subscriptions"`
			}{[]describedClientMetrics{}})
		}
		return nil
	}
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("describe client metrics: %w", cl.Explain(err))
	}
	var described []describedClientMetrics
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("describe client metrics %s: %w%s", r.ResourceName, err, messageSuffix(r.ErrorMessage))
		}
		var own []kmsg.DescribeConfigsResponseResourceConfig
		for _, e := range r.Configs {
			if e.Source == kmsg.ConfigSourceClientMetricsConfig {
				own = append(own, e)
			}
		}
		if asJSON {
			d := describedClientMetrics{Name: r.ResourceName, Configs: map[string]string{}}
			for _, e := range own {
				d.Configs[e.Name] = derefString(e.Value)
			}
			described = append(described, d)
			continue
		}
		if len(own) == 0 { // Kafka's message for a name with no configs
			fmt.Fprintf(c.App.Writer, "The client metric resource %s doesn't exist and doesn't have dynamic config.\n", r.ResourceName)
			continue
		}
		fmt.Fprintf(c.App.Writer, "Client metrics configs for %s are:\n", r.ResourceName)
		for _, e := range own {
			fmt.Fprintf(c.App.Writer, "  %s=%s\n", e.Name, derefString(e.Value))
		}
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Subscriptions []describedClientMetrics `json:"subscriptions"`
		}{described})
	}
	return nil
}

func messageSuffix(m *string) string {
	if m == nil || *m == "" {
		return ""
	}
	return ": " + *m
}

func runClientMetricsAlter(c *ucli.Context) error {
	name := c.String("name")
	switch {
	case name != "" && c.Bool("generate-name"):
		return errors.New("--name and --generate-name cannot be given together")
	case c.Bool("generate-name"):
		var id [16]byte
		_, _ = rand.Read(id[:])
		name = base64.RawURLEncoding.EncodeToString(id[:])
	case name == "":
		return errors.New("alter needs --name or --generate-name")
	}
	var configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
	set := func(key, value string) {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = key, &value
		configs = append(configs, cfg)
	}
	if c.IsSet("metrics") {
		set("metrics", c.String("metrics"))
	}
	if c.IsSet("interval") {
		if _, err := strconv.ParseInt(c.String("interval"), 10, 32); err != nil {
			return fmt.Errorf("--interval: %q is not a number of milliseconds", c.String("interval"))
		}
		set("interval.ms", c.String("interval"))
	}
	if c.IsSet("match") {
		set("match", c.String("match"))
	}
	if len(configs) == 0 {
		return errors.New("alter needs at least one of --metrics, --interval and --match")
	}
	if err := alterClientMetrics(c, name, configs); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "Altered client metrics config for %s.\n", name)
	return nil
}

func runClientMetricsDelete(c *ucli.Context) error {
	name := c.String("name")
	if name == "" {
		return errors.New("delete needs --name")
	}
	var configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
	for _, key := range []string{"metrics", "interval.ms", "match"} {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Op = key, kmsg.IncrementalAlterConfigOpDelete
		configs = append(configs, cfg)
	}
	if err := alterClientMetrics(c, name, configs); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "Deleted client metrics config for %s.\n", name)
	return nil
}

// alterClientMetrics is IncrementalAlterConfigs of subscription name.
func alterClientMetrics(c *ucli.Context, name string, configs []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName, res.Configs = kmsg.ConfigResourceTypeClientMetrics, name, configs
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("alter client metrics %s: %w", name, cl.Explain(err))
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return fmt.Errorf("alter client metrics %s: %w%s", name, err, messageSuffix(r.ErrorMessage))
		}
	}
	return nil
}
