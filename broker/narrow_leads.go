package broker

import (
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// maxNarrowLeadNotes is how many partitions the narrow-leadership line names.
const maxNarrowLeadNotes = 20

// narrowLeads gathers, over one reconciliation pass, the partitions this broker took
// the leadership of with an ISR of itself alone (or without itself) while it has
// replicas elsewhere: after a whole-cluster start every partition can be such a
// leadership at once, so they are logged in one line per pass, not one per partition
// (100,000 lines at 100,000 partitions). The replica's own line is at DEBUG.
// Concurrent openers add to it (openConcurrently).
type narrowLeads struct {
	mu    sync.Mutex
	count int
	first []string
}

// add notes that this broker leads topic-partition in epoch with isr.
func (n *narrowLeads) add(topic string, partition, epoch int32, isr []int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.count++
	if len(n.first) < maxNarrowLeadNotes {
		n.first = append(n.first, fmt.Sprintf("%s-%d@%d%v", topic, partition, epoch, isr))
	}
}

// flush logs the pass's notes, if any, in one line and starts the next pass.
func (n *narrowLeads) flush(log hclog.Logger) {
	n.mu.Lock()
	count, first := n.count, n.first
	n.count, n.first = 0, nil
	n.mu.Unlock()
	if count > 0 {
		log.Info("leading with an ISR of this broker alone: its followers join the ISR as they catch up",
			"partitions", count, "first", first)
	}
}
