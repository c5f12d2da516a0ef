package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	ucli "github.com/urfave/cli/v2"
)

// outputFlag is -o/--output on every list and describe command: text (Kafka's tools'
// format) or json, a stable format for scripts documented in docs/operations.md.
// New fields may be added to the JSON; existing ones keep their names and meaning.
func outputFlag() ucli.Flag {
	return &ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text",
		Usage: "output format: text, or json (stable, for scripts: docs/operations.md)"}
}

// jsonOutput reports whether --output asks for JSON; another value than text or json
// is an error. Commands without the flag print text.
func jsonOutput(c *ucli.Context) (bool, error) {
	if clientcmd.Flag(c, "output") == nil {
		return false, nil
	}
	switch v := strings.ToLower(strings.TrimSpace(c.String("output"))); v {
	case "", "text", "plain", "table":
		return false, nil
	case "json":
		return true, nil
	default:
		return false, fmt.Errorf("bad --output %q: want text or json", c.String("output"))
	}
}

// parseOutputArgs is jsonOutput for a command without positional arguments: the flags
// given after any (Kafka's habit) are applied first.
func parseOutputArgs(c *ucli.Context) (asJSON bool, err error) {
	if _, err := clientcmd.Args(c); err != nil {
		return false, err
	}
	return jsonOutput(c)
}

// writeJSON writes v as indented JSON followed by a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// withOutputFlags is clientcmd.WithFlags plus --output, for list and describe commands.
func withOutputFlags(flags ...ucli.Flag) []ucli.Flag {
	return clientcmd.WithFlags(append([]ucli.Flag{outputFlag()}, flags...)...)
}

// kafkaError formats a Kafka error code with the broker's message, if any.
func kafkaError(err error, message string) error {
	if err == nil {
		return nil
	}
	if message == "" {
		return err
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Errorf("%s: %s", ke.Message, message)
	}
	return fmt.Errorf("%w: %s", err, message)
}
