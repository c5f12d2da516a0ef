package workload

import (
	"bytes"
	"strings"
	"testing"
)

// A drain that listed no end offset read nothing: the checks on its reads say so,
// instead of "ok" on no data.
func TestReportSaysNotCheckedWithoutInput(t *testing.T) {
	rep := &Report{Partitions: 2, Consumers: 1, Transactions: true,
		Unfinished: map[int32]int64{0: 0, 1: 0}}
	rep.Acknowledged, rep.Unchecked = 5, 5
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"acknowledged records lost                      0           not checked (the drain read nothing)",
		"duplicated records                             0           not checked (the drain read nothing)",
		"reordered within a key                         0           not checked (the drain read nothing)",
		"records never produced                         0           not checked (the drain read nothing)",
		"acknowledged at another offset                 0           not checked (the drain read nothing)",
		"aborted records read                           0           ok so far (checked on the group's reads only)",
		"acknowledged records the group never received  0           not checked (the group did not reach the end offsets)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
