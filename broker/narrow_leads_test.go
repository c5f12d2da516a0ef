package broker

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// Leaderships with an ISR of this broker alone, taken by concurrent openers in one pass,
// are logged in one line naming how many and the first few; an empty pass logs nothing.
func TestNarrowLeadsLogOneLinePerPass(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	var n narrowLeads
	done := make(chan struct{})
	for w := 0; w < 4; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for p := int32(0); p < 250; p++ {
				n.add("t", int32(w)*250+p, 3, []int32{2})
			}
		}()
	}
	for w := 0; w < 4; w++ {
		<-done
	}
	n.flush(log)
	n.flush(log)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "partitions=1000") || strings.Count(lines[0], "@3[2]") != maxNarrowLeadNotes {
		t.Fatalf("log after 1,000 narrow leaderships and two flushes:\n%s", buf.String())
	}
}
