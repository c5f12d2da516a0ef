package integration

// docs/operations.md's multi-node examples, run as written against the built binary:
// every `petrel server` command of its indented blocks (the three voters, then the
// non-voter that joins), each in its own process group in a temporary directory, with
// the built petrel first in PATH. Two substitutions keep the run off ports other tests
// or engineers use, and change nothing else: every 127.0.0.1:PORT becomes a port free
// now, and the node ids N become B+N, B chosen so that the ports the nodes derive for
// their metrics listener (9644 + node id, as the page says) are free too. Then every
// node's /readyz must answer 200 on its derived port, Metadata must list every broker,
// no node may log "address already in use" (nor anything at WARN or ERROR, the first
// voter started alone until it campaigns), and `petrel top --once` must show every
// broker up with its figures, read from the metrics endpoints the brokers publish.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// docsServerCommands returns the `petrel server` commands of doc's indented code blocks,
// in order, each on one line (backslash continuations joined).
func docsServerCommands(doc string) []string {
	var cmds []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			cmds = append(cmds, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(doc, "\n") {
		body, indented := strings.CutPrefix(line, "    ")
		body = strings.TrimSpace(body)
		switch {
		case len(cur) > 0 && indented:
			cur = append(cur, strings.TrimSuffix(body, "\\"))
			if !strings.HasSuffix(body, "\\") {
				flush()
			}
		case indented && strings.HasPrefix(body, "petrel server "):
			cur = append(cur, strings.TrimSuffix(body, "\\"))
			if !strings.HasSuffix(body, "\\") {
				flush()
			}
		default:
			flush()
		}
	}
	flush()
	for i, c := range cmds {
		cmds[i] = strings.Join(strings.Fields(c), " ")
	}
	return cmds
}

func TestDocsServerCommands(t *testing.T) {
	t.Parallel()
	got := docsServerCommands("text\n\n    petrel server --node-id 0 \\\n      --listen a:1\n\n    petrel server --node-id 1\n    petrel topics list\n")
	want := []string{"petrel server --node-id 0 --listen a:1", "petrel server --node-id 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("%q", got)
	}
}

// TestDocs_OperationsMultiNodeExamples runs docs/operations.md's cluster examples.
func TestDocs_OperationsMultiNodeExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := docsServerCommands(string(doc))
	if len(cmds) < 4 {
		t.Fatalf("docs/operations.md has %d petrel server commands, want the three voters and a joining node: %q", len(cmds), cmds)
	}
	for _, c := range cmds {
		if strings.Contains(c, "--metrics-listen") {
			t.Errorf("the example sets --metrics-listen, which the page says is derived: %s", c)
		}
	}
	var ids []int
	idRe := regexp.MustCompile(`--node-id (\d+)`)
	for _, c := range cmds {
		m := idRe.FindStringSubmatch(c)
		if m == nil {
			t.Fatalf("no --node-id in %s", c)
		}
		id, _ := strconv.Atoi(m[1])
		ids = append(ids, id)
	}
	base, err := freeMetricsBase(ids)
	if err != nil {
		t.Fatal(err)
	}

	// The ports of the commands, each replaced by a free one, and the node ids shifted.
	portRe := regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	var docPorts []string
	for _, c := range cmds {
		for _, m := range portRe.FindAllStringSubmatch(c, -1) {
			if !slices.Contains(docPorts, m[1]) {
				docPorts = append(docPorts, m[1])
			}
		}
	}
	free, err := procFreePorts(len(docPorts))
	if err != nil {
		t.Fatal(err)
	}
	portOf := map[string]string{}
	for i, p := range docPorts {
		portOf[p] = strconv.Itoa(free[i])
	}
	rewrite := func(c string) string {
		c = portRe.ReplaceAllStringFunc(c, func(a string) string { return "127.0.0.1:" + portOf[strings.TrimPrefix(a, "127.0.0.1:")] })
		c = idRe.ReplaceAllStringFunc(c, func(a string) string {
			n, _ := strconv.Atoi(strings.TrimPrefix(a, "--node-id "))
			return "--node-id " + strconv.Itoa(base+n)
		})
		return regexp.MustCompile(`(^|[ ,=])(\d+)@`).ReplaceAllStringFunc(c, func(a string) string {
			lead := ""
			if a[0] < '0' || a[0] > '9' {
				lead, a = a[:1], a[1:]
			}
			n, _ := strconv.Atoi(strings.TrimSuffix(a, "@"))
			return lead + strconv.Itoa(base+n) + "@"
		})
	}

	bin := procBuildPetrel(t)
	var logs []string
	for i := range cmds {
		logs = append(logs, fmt.Sprintf("node%d.log", i))
	}
	sh := newDocsShell(t, bin, logs)
	dir := sh.dir
	logOf := func(i int) string {
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.log", i)))
		return string(b)
	}
	start := func(i int) {
		line := rewrite(cmds[i])
		t.Logf("node %d: %s", i, line)
		cmd := exec.Command("bash", "-c", "exec "+line+fmt.Sprintf(" > node%d.log 2>&1", i))
		cmd.Dir, cmd.Env = dir, sh.env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sh.groups = append(sh.groups, cmd.Process.Pid)
		go cmd.Wait() //nolint:errcheck // reaped; its state is read from its log and /readyz
	}
	httpc := &http.Client{Timeout: 2 * time.Second}
	ready := func(i int) error {
		resp, err := httpc.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", 9644+base+ids[i]))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	}
	// waitReady polls until nodes' /readyz answers 200, failing on a bind error.
	waitReady := func(nodes []int) {
		deadline := time.Now().Add(90 * time.Second)
		for {
			var err error
			for _, i := range nodes {
				if strings.Contains(logOf(i), "address already in use") {
					t.Fatalf("node %d could not bind a port:\n%s", i, tailLines(logOf(i), 10))
				}
				if e := ready(i); e != nil && err == nil {
					err = fmt.Errorf("node %d (metrics on 9644 + %d): %w", i, base+ids[i], e)
				}
			}
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not ready within 90s: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// The voters (every command without --join) first, then the nodes that join.
	var voters, joiners []int
	for i, c := range cmds {
		if strings.Contains(c, "--join") {
			joiners = append(joiners, i)
		} else {
			voters = append(voters, i)
		}
	}
	// The first voter alone until it campaigns, as an operator starting them one by
	// one: its requests to the voters not yet up are routine, not WARN or ERROR.
	start(voters[0])
	testwait.ForWhat(t, 30*time.Second, "the first voter campaigning alone", func() error {
		if !strings.Contains(logOf(voters[0]), "entering candidate state") {
			return errors.New("no election started yet")
		}
		return nil
	})
	for _, i := range voters[1:] {
		start(i)
	}
	waitReady(voters)
	for _, i := range joiners {
		start(i)
	}
	all := append(slices.Clone(voters), joiners...)
	waitReady(all)
	for _, i := range all {
		if want := fmt.Sprintf("metrics 127.0.0.1:%d)", 9644+base+ids[i]); !strings.Contains(logOf(i), want) {
			t.Errorf("node %d does not say %q:\n%s", i, want, tailLines(logOf(i), 5))
		}
	}

	first := "127.0.0.1:" + portOf[portRe.FindStringSubmatch(cmds[0])[1]]
	cl, err := kgo.NewClient(kgo.SeedBrokers(first))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	testwait.ForWhat(t, 30*time.Second, "every broker in Metadata", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		if err == nil && len(m.Brokers) != len(cmds) {
			err = fmt.Errorf("brokers %v", m.Brokers.NodeIDs())
		}
		return err
	})

	// petrel top --once finds every broker's metrics endpoint from the cluster.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "top", "--once", "-b", first, "--interval", "500ms").CombinedOutput()
	if err != nil {
		t.Fatalf("petrel top --once: %v\n%s", err, out)
	}
	t.Logf("petrel top --once:\n%s", out)
	for _, i := range all {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\*? +\S+ +up +\d`, base+ids[i])).Match(out) {
			t.Errorf("broker %d is not up with its figures in petrel top", base+ids[i])
		}
	}
	if strings.Contains(string(out), "no answer from metrics endpoint") {
		t.Errorf("petrel top missed a metrics endpoint")
	}
	// A bootstrap as documented logs nothing at WARN or ERROR (P18 item 4).
	for _, i := range all {
		for _, line := range strings.Split(logOf(i), "\n") {
			if strings.Contains(line, "[WARN]") || strings.Contains(line, "[ERROR]") {
				t.Errorf("node %d: %s", i, line)
			}
		}
	}
}

// freeMetricsBase returns B such that 127.0.0.1:(9644 + B + id) is free now for every
// id, below the kernel's ephemeral range (procFreePorts' reasoning).
func freeMetricsBase(ids []int) (int, error) {
	hi := procEphemeralLow()
	if hi == 0 {
		hi = 32768
	}
	top := slices.Max(ids)
	for range 200 {
		base := 1000 + rand.IntN(hi-9644-top-1000)
		ok := true
		var lns []net.Listener
		for _, id := range ids {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", 9644+base+id))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no free metrics ports below the ephemeral range")
}
