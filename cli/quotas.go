package cli

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	ucli "github.com/urfave/cli/v2"
)

// quotasCommand is `petrel quotas describe|alter`, shaped like kafka-configs.sh
// --entity-type users|clients: --entity-type and --entity-name pair in order
// (--entity-type users --entity-name alice --entity-type clients --entity-name app),
// --user-defaults and --client-defaults name the default entities, and alter takes
// --add-config producer_byte_rate=1048576,... and --delete-config.
func quotasCommand() *ucli.Command {
	entityFlags := func(extra ...ucli.Flag) []ucli.Flag {
		return clientcmd.WithFlags(append([]ucli.Flag{
			&ucli.StringSliceFlag{Name: "entity-type", Usage: "users or clients (repeatable, once each)"},
			&ucli.StringSliceFlag{Name: "entity-name", Usage: "the user or client id, in the order of --entity-type"},
			&ucli.BoolFlag{Name: "user-defaults", Usage: "the default user"},
			&ucli.BoolFlag{Name: "client-defaults", Usage: "the default client id"},
		}, extra...)...)
	}
	return &ucli.Command{
		Name:  "quotas",
		Usage: "describe and alter client quotas, as kafka-configs.sh --entity-type users|clients",
		Subcommands: []*ucli.Command{
			{Name: "describe", Usage: "list the quotas of the named entities (every quota when none is named)", Flags: append(entityFlags(), outputFlag()), Action: runQuotasDescribe},
			{Name: "alter", Usage: "set and delete quotas", Flags: entityFlags(
				&ucli.StringFlag{Name: "add-config", Usage: "quotas to set: producer_byte_rate=N,consumer_byte_rate=N,request_percentage=N"},
				&ucli.StringFlag{Name: "delete-config", Usage: "quotas to delete: k1,k2"},
			), Action: runQuotasAlter},
		},
	}
}

// quotaPart is one part of a quota entity; a nil name is the default.
type quotaPart struct {
	typ  string // "user" or "client-id"
	name *string
}

func parseQuotaEntity(c *ucli.Context) ([]quotaPart, error) {
	types, names := c.StringSlice("entity-type"), c.StringSlice("entity-name")
	var parts []quotaPart
	seen := map[string]bool{}
	for _, t := range types {
		var typ string
		var isDefault bool
		switch t {
		case "users":
			typ, isDefault = "user", c.Bool("user-defaults")
		case "clients":
			typ, isDefault = "client-id", c.Bool("client-defaults")
		default:
			return nil, fmt.Errorf("--entity-type must be users or clients, got %q", t)
		}
		if seen[typ] {
			return nil, fmt.Errorf("--entity-type %s is given twice", t)
		}
		seen[typ] = true
		p := quotaPart{typ: typ}
		if !isDefault {
			if len(names) == 0 {
				return nil, fmt.Errorf("--entity-type %s needs an --entity-name (or --%s-defaults)", t, strings.TrimSuffix(t, "s"))
			}
			p.name, names = &names[0], names[1:]
		}
		parts = append(parts, p)
	}
	if len(names) > 0 {
		return nil, errors.New("more --entity-name than --entity-type")
	}
	if c.Bool("user-defaults") && !seen["user"] {
		parts = append(parts, quotaPart{typ: "user"})
	}
	if c.Bool("client-defaults") && !seen["client-id"] {
		parts = append(parts, quotaPart{typ: "client-id"})
	}
	return parts, nil
}

// describeQuotaJSONKey orders quota entities in the JSON listing.
func describeQuotaJSONKey(entity map[string]*string) string {
	key := ""
	for _, typ := range []string{"user", "client-id"} {
		if name, ok := entity[typ]; ok {
			key += typ + "=" + derefString(name) + ";"
		}
	}
	return key
}

// describeQuotaEntity is kafka-configs.sh's entity wording.
func describeQuotaEntity(parts []quotaPart) string {
	var out []string
	for _, p := range parts {
		label := "user-principal"
		if p.typ == "client-id" {
			label = "client-id"
		}
		if p.name == nil {
			out = append(out, "the default "+label)
		} else {
			out = append(out, fmt.Sprintf("%s '%s'", label, *p.name))
		}
	}
	return strings.Join(out, ", ")
}

func runQuotasDescribe(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	parts, err := parseQuotaEntity(c)
	if err != nil {
		return err
	}
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	req.Strict = len(parts) > 0
	for _, p := range parts {
		comp := kmsg.NewDescribeClientQuotasRequestComponent()
		comp.EntityType = p.typ
		if p.name == nil {
			comp.MatchType = 1
		} else {
			comp.MatchType, comp.Match = 0, p.name
		}
		req.Components = append(req.Components, comp)
	}
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("describe client quotas: %w", cl.Explain(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return fmt.Errorf("describe client quotas: %w", kafkaError(err, derefString(resp.ErrorMessage)))
	}
	if asJSON {
		// entity: {"user": "alice", "client-id": null}, a null name the default.
		type quota struct {
			Entity map[string]*string `json:"entity"`
			Values map[string]float64 `json:"values"`
		}
		quotas := []quota{}
		for _, e := range resp.Entries {
			q := quota{Entity: map[string]*string{}, Values: map[string]float64{}}
			for _, en := range e.Entity {
				q.Entity[en.Type] = en.Name
			}
			for _, v := range e.Values {
				q.Values[v.Key] = v.Value
			}
			quotas = append(quotas, q)
		}
		sort.Slice(quotas, func(i, j int) bool {
			return describeQuotaJSONKey(quotas[i].Entity) < describeQuotaJSONKey(quotas[j].Entity)
		})
		return writeJSON(c.App.Writer, struct {
			Quotas []quota `json:"quotas"`
		}{quotas})
	}
	var lines []string
	for _, e := range resp.Entries {
		var ps []quotaPart
		for _, en := range e.Entity {
			ps = append(ps, quotaPart{en.Type, en.Name})
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].typ > ps[j].typ }) // user first
		var vals []string
		for _, v := range e.Values {
			vals = append(vals, v.Key+"="+strconv.FormatFloat(v.Value, 'f', 1, 64))
		}
		sort.Strings(vals)
		lines = append(lines, fmt.Sprintf("Quota configs for %s are %s", describeQuotaEntity(ps), strings.Join(vals, ", ")))
	}
	sort.Strings(lines)
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(l + "\n")
	}
	_, err = io.WriteString(c.App.Writer, out.String())
	return err
}

func runQuotasAlter(c *ucli.Context) error {
	if _, err := clientcmd.Args(c); err != nil {
		return err
	}
	parts, err := parseQuotaEntity(c)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		return errors.New("alter needs --entity-type with --entity-name, --user-defaults or --client-defaults")
	}
	entry := kmsg.NewAlterClientQuotasRequestEntry()
	for _, p := range parts {
		en := kmsg.NewAlterClientQuotasRequestEntryEntity()
		en.Type, en.Name = p.typ, p.name
		entry.Entity = append(entry.Entity, en)
	}
	if s := c.String("add-config"); s != "" {
		for _, kv := range strings.Split(s, ",") {
			k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
			f, perr := strconv.ParseFloat(v, 64)
			if !ok || k == "" || perr != nil {
				return fmt.Errorf("--add-config %q: want key=number", kv)
			}
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Value = k, f
			entry.Ops = append(entry.Ops, op)
		}
	}
	if s := c.String("delete-config"); s != "" {
		for _, k := range strings.Split(s, ",") {
			op := kmsg.NewAlterClientQuotasRequestEntryOp()
			op.Key, op.Remove = strings.TrimSpace(k), true
			entry.Ops = append(entry.Ops, op)
		}
	}
	if len(entry.Ops) == 0 {
		return errors.New("alter needs --add-config or --delete-config")
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = append(req.Entries, entry)
	resp, err := req.RequestWith(ctx, cl.Client)
	if err != nil {
		return fmt.Errorf("alter client quotas: %w", cl.Explain(err))
	}
	for _, e := range resp.Entries {
		if err := kerr.ErrorForCode(e.ErrorCode); err != nil {
			return fmt.Errorf("alter client quotas: %w", kafkaError(err, derefString(e.ErrorMessage)))
		}
	}
	_, err = fmt.Fprintf(c.App.Writer, "Completed updating config for entity: %s.\n", describeQuotaEntity(parts))
	return err
}
