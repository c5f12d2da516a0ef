package perf

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestMain runs `petrel perf floor`'s node processes, which it starts from this test
// binary, instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(FloorNodeEnv) != "" {
		os.Exit(runWithIO(os.Args, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestPerfFloor(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runWithIO([]string{"petrel", "perf", "floor", "--records", "200", "--record-size", "1024"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 || !strings.Contains(lines[0], "P50 MS") || !strings.Contains(lines[0], "P99 MS") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "200 ") {
		t.Fatalf("output %q", out.String())
	}
	if runtime.GOOS == "linux" && (len(lines) != 3 || !strings.HasPrefix(lines[2], "voluntary context switches per record: ") || !strings.Contains(lines[2], "(leader, then followers: ")) {
		t.Fatalf("no context switch line: %q", out.String())
	}
}

func TestPerfFloor_FsyncJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"petrel", "perf", "floor", "--records", "50", "--replicas", "2", "--fsync", "--dir", t.TempDir(), "--json"}
	if code := runWithIO(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var sum floorSummary
	if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
		t.Fatalf("%v: %q", err, out.String())
	}
	if runtime.GOOS == "linux" && len(sum.SwitchesPerRecord) != 2 { // the leader and one follower
		t.Fatalf("context switches %v", sum.SwitchesPerRecord)
	}
	if sum.Records != 50 || sum.Errors != 0 || sum.Bytes != 50*1024 || sum.LatencyMs == nil || sum.LatencyMs.P50 <= 0 || sum.LatencyMs.P99 < sum.LatencyMs.P50 {
		t.Fatalf("summary %+v", sum)
	}
}

func TestPerfFloor_LeaderAlone(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runWithIO([]string{"petrel", "perf", "floor", "--records", "20", "--replicas", "1", "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), `"records":20,`) {
		t.Fatalf("output %q", out.String())
	}
}

func TestPerfFloor_BadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--records", "10", "--record-size", "7"}, "bad --record-size 7 (8 to 16777216)"},
		{[]string{"--records", "10", "--replicas", "0"}, "bad --replicas 0 (1 to 16)"},
		{[]string{"--records", "10", "--replicas", "17"}, "bad --replicas 17"},
		{[]string{"--records", "-1"}, "bad --records -1"},
		{nil, "give --records, --duration or both"},
		{[]string{"--records", "10", "--fsync", "--dir", "/nonexistent/petrel-floor"}, "no such file or directory"},
	} {
		var out, errOut bytes.Buffer
		code := runWithIO(append([]string{"petrel", "perf", "floor"}, tc.args...), &out, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
