package broker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafka42Row is one row of docs/compatibility.md's "Versions against Kafka 4.2".
type kafka42Row struct {
	name, petrel, kafka, why string
}

// readKafka42Table parses the table by api key.
func readKafka42Table(t *testing.T) map[int16]kafka42Row {
	t.Helper()
	doc, err := os.ReadFile("../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Versions against Kafka 4.2\n")
	if !ok {
		t.Fatal(`docs/compatibility.md has no "## Versions against Kafka 4.2" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[int16]kafka42Row{}
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 7 {
			continue
		}
		key, err := strconv.ParseInt(strings.TrimSpace(cells[1]), 10, 16)
		if err != nil {
			continue // the header and its rule
		}
		rows[int16(key)] = kafka42Row{strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3]),
			strings.TrimSpace(cells[4]), strings.TrimSpace(cells[5])}
	}
	return rows
}

// TestAPIVersionsAgainstKafka42 (P22 items 1 and 8): docs/compatibility.md lists every
// api key kmsg knows with the range Petrel serves, exactly as registered, and Kafka
// 4.2's maximum (never above kmsg's); an API Petrel serves below Kafka 4.2's maximum,
// or does not serve while Kafka 4.2 does, must give its reason there.
func TestAPIVersionsAgainstKafka42(t *testing.T) {
	rows := readKafka42Table(t)
	for key := int16(0); key < 1000; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		name := kmsg.NameForKey(key)
		row, ok := rows[key]
		if !ok {
			t.Errorf("key %d %s: no row", key, name)
			continue
		}
		delete(rows, key)
		petrelMax := int16(-1)
		want := "—"
		switch a := apiFor(key); {
		case key == 18:
			want, petrelMax = "0–4", 4 // built into rpc.Registry
		case a != nil:
			want, petrelMax = fmt.Sprintf("%d–%d", a.min, a.max), a.max
			if a.internal {
				want += " (internal)"
			}
		}
		if row.name != name || row.petrel != want {
			t.Errorf("key %d: row says %s %q, Petrel registers %s %q", key, row.name, row.petrel, name, want)
		}
		if row.kafka == "—" {
			continue
		}
		kafkaMax, err := strconv.ParseInt(row.kafka, 10, 16)
		if err != nil || int16(kafkaMax) > req.MaxVersion() {
			t.Errorf("key %d %s: Kafka 4.2 column %q is not a version up to kmsg's %d", key, name, row.kafka, req.MaxVersion())
			continue
		}
		if petrelMax < int16(kafkaMax) && row.why == "" {
			t.Errorf("key %d %s: Petrel's maximum %d is below Kafka 4.2's %d with no reason given", key, name, petrelMax, kafkaMax)
		}
	}
	for key, row := range rows {
		t.Errorf("key %d %s: a row for an api key kmsg does not know", key, row.name)
	}
}
