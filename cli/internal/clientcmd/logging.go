package clientcmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"
	ucli "github.com/urfave/cli/v2"
)

// logLevels are the values --log-level accepts.
var logLevels = []string{"trace", "debug", "info", "warn", "error"}

// logFormats are the values --log-format accepts: hclog's text lines, or one JSON
// object per line (hclog's JSON output: @timestamp, @level, @module, @message and the
// line's fields).
var logFormats = []string{"text", "json"}

// choiceValue is the value of a flag that takes one of a fixed list (--log-level,
// --log-format), checked when it is set (on the command line, by the environment or by
// Args), so that a bad value is refused before anything runs.
type choiceValue struct {
	choices []string
	value   string
}

func (v *choiceValue) Set(s string) error {
	s = strings.ToLower(strings.TrimSpace(s))
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want %s", strings.Join(v.choices, ", "))
	}
	v.value = s
	return nil
}

func (v *choiceValue) String() string {
	if v == nil {
		return ""
	}
	return v.value
}

// choiceFlag is a flag taking one of choices, def when not given; the app's copy also
// reads the environment variable env.
func choiceFlag(name, usage string, choices []string, def, env string, app bool) ucli.Flag {
	f := &ucli.GenericFlag{Name: name, Usage: usage + ": " + strings.Join(choices, ", "),
		Value: &choiceValue{choices: choices, value: def}}
	if app {
		f.EnvVars = []string{env}
	}
	return f
}

// LogLevelFlag is --log-level; the app's copy also reads PETREL_LOG_LEVEL. Every command
// has its own copy, so the flag works before or after the command name.
func LogLevelFlag(app bool) ucli.Flag {
	return choiceFlag("log-level", "log level", logLevels, "info", "PETREL_LOG_LEVEL", app)
}

// LogFormatFlag is --log-format, like --log-level; the app's copy also reads
// PETREL_LOG_FORMAT.
func LogFormatFlag(app bool) ucli.Flag {
	return choiceFlag("log-format", "log format", logFormats, "text", "PETREL_LOG_FORMAT", app)
}

// logLevel is the innermost --log-level given (the command's, then its parents', then
// the app's or PETREL_LOG_LEVEL), or info.
func logLevel(c *ucli.Context) hclog.Level {
	return hclog.LevelFromString(innermostChoice(c, "log-level", "info"))
}

// logJSON reports whether the innermost --log-format given (or PETREL_LOG_FORMAT)
// is json.
func logJSON(c *ucli.Context) bool {
	return innermostChoice(c, "log-format", "text") == "json"
}

// innermostChoice is the value of the choice flag name set closest to c's command (its
// own, then its parents', then the app's or the environment's), or def.
func innermostChoice(c *ucli.Context, name, def string) string {
	for _, ctx := range c.Lineage() {
		if ctx.Command == nil && ctx.App == nil {
			continue
		}
		if !locallySet(ctx, name) {
			continue
		}
		if v, ok := ctx.Generic(name).(*choiceValue); ok && v.value != "" {
			return v.value
		}
	}
	return def
}

// locallySet reports whether ctx's own flag set (not a parent's) has name set, on the
// command line, by Args or from the environment.
func locallySet(ctx *ucli.Context, name string) bool {
	for _, n := range ctx.LocalFlagNames() {
		if n == name {
			return true
		}
	}
	return false
}

// Logger builds the process logger from --log-level and --log-format (given before
// or after the command name). Every log line in petrel goes through go-hclog.
func Logger(c *ucli.Context) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "petrel",
		Level:      logLevel(c),
		Output:     c.App.ErrWriter,
		JSONFormat: logJSON(c),
	})
}
