package cli

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/petrel-broker/petrel/cli/internal/clientcmd"
	"github.com/twmb/franz-go/pkg/kadm"
	ucli "github.com/urfave/cli/v2"
)

// usersCommand is `petrel users scram set|delete|list`: SCRAM credentials through
// AlterUserScramCredentials and DescribeUserScramCredentials. The same changes are
// available in kafka-configs.sh's form as `petrel configs alter --entity-type users
// --entity-name alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'`.
func usersCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "users",
		Usage: "manage users' SCRAM credentials (stored salted in the metadata log)",
		Subcommands: []*ucli.Command{{
			Name:  "scram",
			Usage: "SCRAM-SHA-256 and SCRAM-SHA-512 credentials",
			Subcommands: []*ucli.Command{
				{
					Name:      "set",
					Usage:     "create or replace a user's credential",
					ArgsUsage: "USER",
					Flags: clientcmd.WithFlags(
						&ucli.StringFlag{Name: "mechanism", Usage: "SCRAM-SHA-256 or SCRAM-SHA-512", Value: "SCRAM-SHA-256"},
						&ucli.IntFlag{Name: "iterations", Usage: "PBKDF2 iterations, 4096-16384", Value: 4096},
						&ucli.StringFlag{Name: "password", Usage: "the password (visible in the process list; prefer --password-file)"},
						&ucli.StringFlag{Name: "password-file", Usage: "a file holding the password on its first line"},
					),
					Action: runUsersScramSet,
				},
				{
					Name:      "delete",
					Usage:     "delete a user's credential of one mechanism",
					ArgsUsage: "USER",
					Flags:     clientcmd.WithFlags(&ucli.StringFlag{Name: "mechanism", Usage: "SCRAM-SHA-256 or SCRAM-SHA-512", Value: "SCRAM-SHA-256"}),
					Action:    runUsersScramDelete,
				},
				{
					Name:      "list",
					Usage:     "list users' mechanisms and iterations, in kafka-configs.sh's words",
					ArgsUsage: "[USER...]",
					Flags:     withOutputFlags(),
					Action:    runUsersScramList,
				},
			},
		}},
	}
}

// scramMechanism parses a mechanism name.
func scramMechanism(s string) (kadm.ScramMechanism, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("unknown SCRAM mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", s)
}

func oneUser(c *ucli.Context) (string, error) {
	args, err := clientcmd.Args(c)
	if err != nil {
		return "", err
	}
	if len(args) != 1 || args[0] == "" {
		return "", errors.New("name exactly one user")
	}
	return args[0], nil
}

func runUsersScramSet(c *ucli.Context) error {
	user, err := oneUser(c)
	if err != nil {
		return err
	}
	mech, err := scramMechanism(c.String("mechanism"))
	if err != nil {
		return err
	}
	password := c.String("password")
	if f := c.String("password-file"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("--password-file: %w", err)
		}
		password, _, _ = strings.Cut(strings.TrimRight(string(b), "\r\n"), "\n")
	}
	if password == "" {
		return errors.New("set needs --password or --password-file")
	}
	return alterScram(c, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: int32(c.Int("iterations")), Password: password}})
}

func runUsersScramDelete(c *ucli.Context) error {
	user, err := oneUser(c)
	if err != nil {
		return err
	}
	mech, err := scramMechanism(c.String("mechanism"))
	if err != nil {
		return err
	}
	return alterScram(c, []kadm.DeleteSCRAM{{User: user, Mechanism: mech}}, nil)
}

// alterScram sends the changes and prints kafka-configs.sh's confirmation per user.
func alterScram(c *ucli.Context, del []kadm.DeleteSCRAM, upsert []kadm.UpsertSCRAM) error {
	for _, u := range upsert {
		if u.Iterations < 4096 || u.Iterations > 16384 {
			return fmt.Errorf("--iterations %d: SCRAM iterations must be 4096-16384", u.Iterations)
		}
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	res, err := cl.Admin().AlterUserSCRAMs(ctx, del, upsert)
	if err != nil {
		return fmt.Errorf("alter SCRAM credentials: %w", cl.Explain(err))
	}
	for _, r := range res.Sorted() {
		if r.Err != nil {
			return fmt.Errorf("user %s: %w", r.User, kafkaError(r.Err, r.ErrMessage))
		}
		if _, err := fmt.Fprintf(c.App.Writer, "Completed updating config for user %s.\n", r.User); err != nil {
			return err
		}
	}
	return nil
}

func runUsersScramList(c *ucli.Context) error {
	users, err := clientcmd.Args(c)
	if err != nil {
		return err
	}
	return listScram(c, users)
}

// listScram prints, per user, kafka-configs.sh --describe --entity-type users's line:
// SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192
func listScram(c *ucli.Context, users []string) error {
	asJSON, err := jsonOutput(c)
	if err != nil {
		return err
	}
	cl, ctx, done, err := clientcmd.Connect(c)
	if err != nil {
		return err
	}
	defer done()
	described, err := cl.Admin().DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return fmt.Errorf("describe SCRAM credentials: %w", cl.Explain(err))
	}
	names := make([]string, 0, len(described))
	for name := range described {
		names = append(names, name)
	}
	slices.Sort(names)
	type credential struct {
		Mechanism  string `json:"mechanism"`
		Iterations int32  `json:"iterations"`
	}
	type user struct {
		User        string       `json:"user"`
		Credentials []credential `json:"credentials"`
	}
	listed := []user{}
	for _, name := range names {
		d := described[name]
		if d.Err != nil {
			return fmt.Errorf("user %s: %w", name, kafkaError(d.Err, d.ErrMessage))
		}
		if asJSON {
			u := user{User: name, Credentials: []credential{}}
			for _, ci := range d.CredInfos {
				u.Credentials = append(u.Credentials, credential{ci.Mechanism.String(), ci.Iterations})
			}
			listed = append(listed, u)
			continue
		}
		var parts []string
		for _, ci := range d.CredInfos {
			parts = append(parts, ci.Mechanism.String()+"=iterations="+strconv.Itoa(int(ci.Iterations)))
		}
		if _, err := fmt.Fprintf(c.App.Writer, "SCRAM credential configs for user-principal '%s' are %s\n", name, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(c.App.Writer, struct {
			Users []user `json:"users"`
		}{listed})
	}
	return nil
}

// scramViaConfigs handles kafka-configs.sh's SCRAM form of `configs alter` and
// `configs describe` with --entity-type users: --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]' and --delete-config
// SCRAM-SHA-512. handled is false for anything else.
func scramViaConfigs(c *ucli.Context, alter bool) (handled bool, err error) {
	if t := c.String("entity-type"); t != "users" && t != "user" {
		return false, nil
	}
	user := c.String("entity-name")
	if !alter {
		var users []string
		if user != "" {
			users = []string{user}
		}
		return true, listScram(c, users)
	}
	if user == "" {
		return true, errors.New("alter --entity-type users needs --entity-name")
	}
	adds, err := parseAddConfig(c.String("add-config"))
	if err != nil {
		return true, err
	}
	var upsert []kadm.UpsertSCRAM
	for _, kv := range adds {
		mech, err := scramMechanism(kv[0])
		if err != nil {
			return true, fmt.Errorf("--add-config %s: only SCRAM-SHA-256 and SCRAM-SHA-512 are user configs here", kv[0])
		}
		u := kadm.UpsertSCRAM{User: user, Mechanism: mech, Iterations: 4096}
		for _, part := range strings.Split(strings.Trim(kv[1], "[]"), ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch k {
			case "iterations":
				n, err := strconv.Atoi(v)
				if err != nil {
					return true, fmt.Errorf("--add-config %s: iterations %q is not a number", kv[0], v)
				}
				u.Iterations = int32(n)
			case "password":
				u.Password = v
			default:
				return true, fmt.Errorf("--add-config %s: unknown key %q (want iterations and password)", kv[0], k)
			}
		}
		if u.Password == "" {
			return true, fmt.Errorf("--add-config %s needs password=...", kv[0])
		}
		upsert = append(upsert, u)
	}
	var del []kadm.DeleteSCRAM
	for _, k := range strings.Split(c.String("delete-config"), ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		mech, err := scramMechanism(k)
		if err != nil {
			return true, fmt.Errorf("--delete-config %s: only SCRAM-SHA-256 and SCRAM-SHA-512 are user configs here", k)
		}
		del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: mech})
	}
	if len(upsert) == 0 && len(del) == 0 {
		return true, errors.New("alter needs --add-config or --delete-config")
	}
	return true, alterScram(c, del, upsert)
}
