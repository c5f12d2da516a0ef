package cli

import (
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	ucli "github.com/urfave/cli/v2"
)

// TestKafkaHabits runs invocations typed by people used to kafka-*.sh, kcat and rpk
// against one broker: each must work and print what Petrel's own spelling prints. On
// the code before P18 every one failed with "flag provided but not defined" or "No help
// topic".
func TestKafkaHabits(t *testing.T) {
	b := startBroker(t, nil)
	addr := b.Addr().String()
	cases := []struct {
		name  string
		stdin string
		args  []string
		want  string // stdout (exact), or a substring when prefixed with "~"
	}{
		{"kafka-topics --create", "", []string{"topics", "--create", "--topic", "habits", "--partitions", "2", "--replication-factor", "1", "--bootstrap-server", addr}, "Created topic habits.\n"},
		{"kafka-topics --list", "", []string{"topics", "--bootstrap-server", addr, "--list"}, "habits\n"},
		{"rpk topic list, kcat -b", "", []string{"topic", "list", "-b", addr}, "habits\n"},
		{"kafka-topics --describe --topic", "", []string{"topics", "--describe", "--topic", "habits", "-b", addr}, "~Topic: habits\tTopicId: "},
		{"kafka-topics --alter", "", []string{"topics", "--alter", "--topic", "habits", "--partitions", "3", "-b", addr}, ""},
		{"kafka-console-producer --topic", "a\nb\nc\n", []string{"produce", "--topic", "habits", "--partition", "0", "--bootstrap-server", addr}, ""},
		{"kafka-console-consumer --topic", "", []string{"consume", "--topic", "habits", "--from-beginning", "--max-messages", "3", "--group", "g1", "-b", addr}, "a\nb\nc\n"},
		{"kafka-consumer-groups --list", "", []string{"groups", "--list", "-b", addr}, "g1\n"},
		{"kafka-consumer-groups --describe --group --offsets", "", []string{"groups", "--describe", "--group", "g1", "--offsets", "-b", addr}, "~g1              habits          0          3               3               0"},
		{"rpk group describe", "", []string{"group", "describe", "g1", "-b", addr}, "~g1              habits"},
		{"kafka-consumer-groups --reset-offsets", "", []string{"groups", "--reset-offsets", "--group", "g1", "--topic", "habits", "--to-earliest", "--execute", "-b", addr}, "~habits                         0          0"},
		{"kafka-get-offsets", "", []string{"topics", "offsets", "--topic", "habits", "--time", "-1", "-b", addr}, "habits:0:3\nhabits:1:0\nhabits:2:0\n"},
		{"kafka-configs --describe --topic", "", []string{"configs", "--describe", "--topic", "habits", "-b", addr}, "Dynamic configs for topic habits are:\n"},
		{"kafka-configs --describe --entity-type", "", []string{"configs", "--describe", "--entity-type", "topics", "--entity-name", "habits", "-b", addr}, "Dynamic configs for topic habits are:\n"},
		{"--log-level after the command", "", []string{"topics", "list", "-b", addr, "--exclude-internal", "--log-level", "error"}, "habits\n"},
		{"--log-level before the command", "", []string{"--log-level", "warn", "topics", "list", "-b", addr, "--exclude-internal"}, "habits\n"},
		{"--log-level after a positional", "", []string{"topics", "describe", "habits", "--log-level", "error", "-b", addr}, "~Topic: habits"},
		{"kafka-topics --delete", "", []string{"topics", "--delete", "--topic", "habits", "-b", addr}, "Deleted topic habits.\n"},
	}
	for _, tc := range cases {
		r := run(t, tc.stdin, tc.args...)
		if r.code != 0 {
			t.Errorf("%s: petrel %s: exit %d, stderr %q", tc.name, strings.Join(tc.args, " "), r.code, r.stderr)
			continue
		}
		if want, sub := strings.CutPrefix(tc.want, "~"); sub {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: stdout %q, want it to contain %q", tc.name, r.stdout, want)
			}
		} else if r.stdout != tc.want {
			t.Errorf("%s: stdout %q, want %q", tc.name, r.stdout, tc.want)
		}
	}
}

// TestUsageErrorsAreOneLine: every mistake is one line on stderr, nothing on stdout,
// exit 1, with the closest name where there is one. Before, unknown flags printed
// "Incorrect Usage" and the whole help, unknown commands "No help topic" with exit 0,
// and a bad --log-level was accepted.
func TestUsageErrorsAreOneLine(t *testing.T) {
	t.Setenv("PETREL_BOOTSTRAP_SERVER", closedPort(t))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"topics", "create", "--topix", "t"}, "flag provided but not defined: --topix; did you mean --topic?"},
		{[]string{"topics", "create", "t", "--partition", "3"}, "flag provided but not defined: --partition; did you mean --partitions?"},
		{[]string{"consume", "t", "--form-beginning"}, "did you mean --from-beginning?"},
		{[]string{"topics", "describe", "--under-replicated"}, "did you mean --under-replicated-partitions?"},
		{[]string{"topics", "list", "--bootstrap-servers", "x:1"}, "did you mean --bootstrap-server (or -b)?"},
		{[]string{"topics", "create", "--zookeeper", "zk:2181", "t"}, "Petrel has no ZooKeeper: use --bootstrap-server"},
		{[]string{"consume", "t", "--property", "print.key=true"}, "use --print-key"},
		{[]string{"topics", "lst"}, `unknown command "lst" for petrel topics; did you mean "list"?`},
		{[]string{"topcis", "list"}, `unknown command "topcis" for petrel; did you mean "topics"?`},
		{[]string{"kafka-topics.sh", "--list"}, "Kafka's kafka-topics is petrel topics"},
		{[]string{"topics", "--list", "--describe"}, "give one action to petrel topics, not both --list and --describe"},
		{[]string{"--log-level", "verbose", "version"}, `invalid value "verbose" for flag --log-level: want trace, debug, info, warn, error`},
		{[]string{"topics", "list", "--log-level", "loud"}, `invalid value "loud" for flag --log-level`},
		{[]string{"topics", "describe", "t", "--log-level", "loud"}, `invalid value "loud" for flag --log-level`},
		{[]string{"--log-format", "yaml", "version"}, `invalid value "yaml" for flag --log-format: want text, json`},
		{[]string{"topics", "list", "--log-format", "xml"}, `invalid value "xml" for flag --log-format`},
		{[]string{"configs", "describe"}, "required flag --entity-type not set"},
		{[]string{"server"}, "required flag --data-dir not set"},
		{[]string{"producers", "describe", "--topic", "t"}, "required flag --partition not set"},
		{[]string{"topics", "describe", "-o", "yaml"}, `bad --output "yaml": want text or json`},
		{[]string{"completion", "tcsh"}, `no completion for shell "tcsh"`},
	}
	for _, tc := range cases {
		r := run(t, "", tc.args...)
		if r.code != 1 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("petrel %s: exit %d, stdout %q, stderr %q: want exit 1 and one line on stderr", strings.Join(tc.args, " "), r.code, r.stdout, r.stderr)
			continue
		}
		if !strings.HasPrefix(r.stderr, "petrel: ") || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("petrel %s: stderr %q, want %q", strings.Join(tc.args, " "), r.stderr, tc.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"topic", "partitions", "replication-factor", "bootstrap-server", "b", "o", "output"}
	for in, want := range map[string]string{"topix": "topic", "partiton": "partitions", "replication": "replication-factor",
		"x": "", "zzzzzz": "", "outptu": "output", "bootstrap": "bootstrap-server"} {
		if got := closest(in, names); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeArgs(t *testing.T) {
	app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	cases := []struct{ in, want string }{
		{"petrel topics --describe --topic t", "petrel topics describe --topic t"},
		{"petrel --log-level debug topics --bootstrap-server h:1 --list", "petrel --log-level debug topics list --bootstrap-server h:1"},
		{"petrel groups --reset-offsets --group g --topic t --to-earliest --execute", "petrel groups reset-offsets --group g --topic t --to-earliest --execute"},
		{"petrel configs --alter --topic t --add-config a=1", "petrel configs alter --topic t --add-config a=1"},
		{"petrel topics describe --describe", "petrel topics describe --describe"}, // a subcommand is named: left alone
		{"petrel topics create --topic describe", "petrel topics create --topic describe"},
		{"petrel topics --topic list --create", "petrel topics create --topic list"},               // list is --topic's value
		{"petrel groups --group g --state --describe", "petrel groups describe --group g --state"}, // --state is a bool of describe
		{"petrel groups --group --describe", "petrel groups describe --group"},                     // a missing value is describe's error
		{"petrel produce t", "petrel produce t"},
		{"petrel topics --generate-bash-completion", "petrel topics --generate-bash-completion"},
	}
	for _, tc := range cases {
		got, err := normalizeArgs(app, strings.Fields(tc.in))
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.in, strings.Join(got, " "), err, tc.want)
		}
	}
}

// Every list and describe command takes -o/--output, and every command --log-level and
// --log-format.
func TestEveryListAndDescribeCommandHasOutput(t *testing.T) {
	app := newApp(&bytes.Buffer{}, &bytes.Buffer{})
	var walk func(path string, cmds []*ucli.Command)
	walk = func(path string, cmds []*ucli.Command) {
		for _, cmd := range cmds {
			name := strings.TrimSpace(path + " " + cmd.Name)
			has := func(flag string) bool {
				for _, f := range cmd.Flags {
					if slices.Contains(f.Names(), flag) {
						return true
					}
				}
				return false
			}
			if !has("log-level") || !has("log-format") {
				t.Errorf("%s lacks --log-level or --log-format", name)
			}
			lists := cmd.Name == "list" || cmd.Name == "describe" || name == "topics offsets" || name == "transactions find-hanging" || name == "version"
			if lists && (!has("output") || !has("o")) {
				t.Errorf("%s has no -o/--output", name)
			}
			if has("bootstrap-server") && !has("b") {
				t.Errorf("%s has --bootstrap-server without -b", name)
			}
			walk(name, cmd.Subcommands)
		}
	}
	walk("", app.Commands)
}

// `petrel version` and `petrel --version` print the same line: the module version, the
// VCS commit and the Go version (they used to differ and print no version).
func TestVersionOutput(t *testing.T) {
	v := mustRun(t, "", "version").stdout
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		if got := mustRun(t, "", args...).stdout; got != v {
			t.Errorf("petrel %s printed %q, petrel version %q", args[0], got, v)
		}
	}
	want := readBuildVersion().String() + "\n"
	if v != want || !strings.Contains(v, runtime.Version()) {
		t.Errorf("petrel version printed %q, want %q", v, want)
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/petrel-broker/petrel", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionFromBuildInfo(info, "").String()
	if want := "petrel v1.2.3 (commit 0123456789ab, modified; go1.26.0 " + runtime.GOOS + "/" + runtime.GOARCH + ")"; got != want {
		t.Errorf("from build info: %q, want %q", got, want)
	}
	if got := versionFromBuildInfo(info, "v9.9.9").Version; got != "v9.9.9" {
		t.Errorf("a link-time version is not preferred: %q", got)
	}
	if got := versionFromBuildInfo(nil, "").String(); !strings.HasPrefix(got, "petrel (devel) (commit unknown; ") {
		t.Errorf("without build info: %q", got)
	}
}

// Shell completion: the scripts, and the completions the binary answers with.
func TestCompletion(t *testing.T) {
	if r := mustRun(t, "", "completion", "bash"); !strings.Contains(r.stdout, "complete -o bashdefault -o default -F _petrel_bash_autocomplete petrel") {
		t.Errorf("bash script: %q", r.stdout)
	}
	if r := mustRun(t, "", "completion", "zsh"); !strings.Contains(r.stdout, "compdef _petrel_zsh_autocomplete petrel") {
		t.Errorf("zsh script: %q", r.stdout)
	}
	if r := mustRun(t, "", "completion", "fish"); !strings.Contains(r.stdout, "complete -c petrel") {
		t.Errorf("fish script: %q", r.stdout)
	}
	// urfave/cli's completion reads os.Args (the shell runs the binary itself).
	defer func(args []string) { os.Args = args }(os.Args)
	os.Args = []string{"petrel", "--generate-bash-completion"}
	if r := mustRun(t, "", "--generate-bash-completion"); !strings.Contains(r.stdout, "\ntopics\n") || !strings.Contains(r.stdout, "\ngroups\n") {
		t.Errorf("top-level completions: %q", r.stdout)
	}
	os.Args = []string{"petrel", "topics", "--generate-bash-completion"}
	if r := mustRun(t, "", "topics", "--generate-bash-completion"); !strings.Contains(r.stdout, "describe\n") || !strings.Contains(r.stdout, "offsets\n") {
		t.Errorf("topics completions: %q", r.stdout)
	}
}
