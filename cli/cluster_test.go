package cli

import (
	"bytes"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestClusterDescribe(t *testing.T) {
	b := startBroker(t, nil)
	r := mustRun(t, "", "cluster", "describe", bootstrap(b))
	host, port, _ := net.SplitHostPort(b.Addr().String())
	addr := net.JoinHostPort(host, port)
	// The metadata offset may move between the command and this read; take it from
	// the output and check it is a real, current offset.
	var offset uint64
	for _, line := range strings.Split(r.stdout, "\n") {
		if v, ok := strings.CutPrefix(line, "Metadata offset:"); ok {
			fmt.Sscan(strings.TrimSpace(v), &offset)
		}
	}
	if offset == 0 || offset > b.Image().Offset {
		t.Fatalf("metadata offset %d (image at %d) in:\n%s", offset, b.Image().Offset, r.stdout)
	}
	pad := strings.Repeat(" ", len(addr)-len("HOST:PORT"))
	off := fmt.Sprint(offset)
	want := fmt.Sprintf("Cluster ID:        %s\nController ID:     0\nController epoch:  %d\nMetadata offset:   %s\nBrokers:           1\n\n"+
		"ID  HOST:PORT%s  RACK  STATE\n0   %s  -     active\n\n"+
		"RAFT ID  ROLE                 METADATA OFFSET  LAG\n0        leader (controller)  %s%s0\n",
		b.Image().ClusterID, b.ControllerEpoch(), off, pad, addr, off, strings.Repeat(" ", len("METADATA OFFSET  ")-len(off)))
	if r.stdout != want {
		t.Fatalf("cluster describe:\n got %q\nwant %q", r.stdout, want)
	}
}

func TestWriteClusterDescription(t *testing.T) {
	var out bytes.Buffer
	err := writeClusterDescription(&out, clusterDescription{
		ClusterID: "abc", ControllerID: -1,
		Brokers: []brokerDescription{{NodeID: 1, Host: "k1", Port: 9092, Rack: "r1"}, {NodeID: 12, Host: "::1", Port: 9094, Fenced: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "Cluster ID:     abc\nController ID:  none\nBrokers:        2\n\n" +
		"ID  HOST:PORT   RACK  STATE\n" +
		"1   k1:9092     r1    active\n" +
		"12  [::1]:9094  -     fenced\n"
	if out.String() != want {
		t.Fatalf("got %q\nwant %q", out.String(), want)
	}
	out.Reset()
	err = writeClusterDescription(&out, clusterDescription{
		ClusterID: "abc", ControllerID: 1,
		Brokers: []brokerDescription{{NodeID: 1, Host: "k1", Port: 9092}},
		Quorum: &quorumDescription{LeaderID: 1, Epoch: 7, HighWatermark: 40, Members: []quorumMember{
			{NodeID: 0, Voter: true, LogEndOffset: 38}, {NodeID: 1, Voter: true, LogEndOffset: 40}, {NodeID: 5, LogEndOffset: -1}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want = "Cluster ID:        abc\nController ID:     1\nController epoch:  7\nMetadata offset:   40\nBrokers:           1\n\n" +
		"ID  HOST:PORT  RACK  STATE\n1   k1:9092    -     active\n\n" +
		"RAFT ID  ROLE                 METADATA OFFSET  LAG\n" +
		"0        voter                38               2\n" +
		"1        leader (controller)  40               0\n" +
		"5        non-voter            -                -\n"
	if out.String() != want {
		t.Fatalf("with quorum: got %q\nwant %q", out.String(), want)
	}
}

// Every client command fails with one clear line, quickly, when nothing listens at the
// bootstrap address.
func TestUnreachableBootstrapServer(t *testing.T) {
	addr := closedPort(t)
	commands := [][]string{
		{"topics", "list"},
		{"topics", "create", "t"},
		{"topics", "describe", "t"},
		{"topics", "delete", "t"},
		{"cluster", "describe"},
		{"producers", "describe", "--topic", "t", "--partition", "0"},
		{"produce", "t"},
		{"consume", "t"},
		{"perf", "produce", "--records", "10", "t"},
		{"perf", "consume", "--records", "10", "t"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args[:2], "-"), func(t *testing.T) {
			args = append(args, "--bootstrap-server", addr, "--timeout", "3s")
			r := mustFail(t, "cannot reach bootstrap server "+addr, "x\n", args...)
			if r.took > 5*time.Second {
				t.Fatalf("took %s", r.took)
			}
		})
	}
}

// A server that accepts connections but never answers is reported after --timeout.
func TestUnresponsiveBootstrapServer(t *testing.T) {
	addr := silentListener(t)
	t.Setenv("PETREL_BOOTSTRAP_SERVER", addr) // the environment names the server
	r := mustFail(t, "within 1s", "", "topics", "list", "--timeout", "1s")
	if r.took > 5*time.Second {
		t.Fatalf("took %s", r.took)
	}
}

func TestBadBootstrapFlag(t *testing.T) {
	mustFail(t, `bad --bootstrap-server "localhost": want host:port`, "", "topics", "list", "--bootstrap-server", "localhost")
	mustFail(t, "--bootstrap-server is empty", "", "topics", "list", "--bootstrap-server", " , ")
	mustFail(t, "--timeout must be positive", "", "topics", "list", "--timeout", "0s")
}
