package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/petrel-broker/petrel/broker"
	"github.com/petrel-broker/petrel/config"
	ucli "github.com/urfave/cli/v2"
)

// wholeValues is a repeatable string flag that keeps each value whole. urfave/cli's
// StringSliceFlag splits every value at commas, which breaks Kafka list properties
// (listeners=PLAINTEXT://a:1,SSL://b:2) and JAAS strings.
type wholeValues []string

func (w *wholeValues) Set(v string) error { *w = append(*w, v); return nil }

func (w *wholeValues) String() string {
	if w == nil {
		return ""
	}
	return strings.Join(*w, " ")
}

// repeatableFlag is a --name key=value flag that may be given many times.
func repeatableFlag(name, usage string) ucli.Flag {
	return &ucli.GenericFlag{Name: name, Usage: usage, Value: &wholeValues{}}
}

// repeatedValues returns every value of a repeatableFlag, in order.
func repeatedValues(c *ucli.Context, name string) []string {
	if w, ok := c.Generic(name).(*wholeValues); ok && w != nil {
		return *w
	}
	return nil
}

// propertyFlags are the flags that supply broker properties, shared by server and dev.
func propertyFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "config", Usage: "Kafka server.properties file"},
		repeatableFlag("set", "a Kafka broker property, key=value, the value taken whole, commas included (repeatable; overrides --config and "+config.EnvPrefix+"* variables)"),
		&ucli.BoolFlag{Name: "strict-config", Usage: "refuse to start on a property Petrel does not know or does not implement, instead of warning"},
	}
}

// gatherProperties reads --config, PETREL_SET_* variables and --set, in that order of
// precedence, into cfg.
func gatherProperties(c *ucli.Context, cfg *broker.Config) error {
	props, sources, err := config.GatherProperties(c.String("config"), os.Environ(), repeatedValues(c, "set"))
	if err != nil {
		return err
	}
	cfg.Properties, cfg.PropertySources, cfg.StrictConfig = props, sources, c.Bool("strict-config")
	return nil
}

// printConfig validates cfg and prints every property with its value and source, then
// the warnings a start would log (on stderr).
func printConfig(c *ucli.Context, cfg broker.Config) error {
	props, warnings, err := broker.CheckConfig(cfg)
	for _, w := range warnings {
		fmt.Fprintln(c.App.ErrWriter, "WARN: "+w)
	}
	if err != nil {
		return err
	}
	return writeEffectiveProperties(c.App.Writer, props)
}

// writeEffectiveProperties prints a table: PROPERTY, VALUE, SOURCE (with the property
// a value derives from, and the status of supplied properties Petrel does not act on).
func writeEffectiveProperties(w io.Writer, props []config.EffectiveProperty) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROPERTY\tVALUE\tSOURCE")
	for _, p := range props {
		src := p.Source
		if p.From != "" {
			src += " (" + p.From + ")"
		}
		if p.Status != "" {
			src += ", " + p.Status
		}
		value := p.Value
		if value == "" {
			value = "null"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Name, value, src)
	}
	return tw.Flush()
}
