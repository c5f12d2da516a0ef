package metadata

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestParallelRecordsMatchSequential: an entry of many records is encoded byte for byte
// as json.Marshal of the envelopes encodes it (every record type, strings that JSON
// escapes included), decodes to the records the sequential decoder returns, and
// reports the first bad record in entry order.
func TestParallelRecordsMatchSequential(t *testing.T) {
	var kinds []Record
	for typ := range RecordType(256) {
		if r, err := newRecord(typ); err == nil {
			kinds = append(kinds, derefRecord(r))
		}
	}
	if len(kinds) < 10 {
		t.Fatalf("only %d record types found", len(kinds))
	}
	odd := "<a&b> \u2028 \"q\" \\ é"
	var recs []Record
	for i := 0; len(recs) < 3*parallelRecords+17; i++ {
		recs = append(recs, kinds[i%len(kinds)],
			ConfigRecord{ResourceType: TopicResource, ResourceName: odd, Name: "n", Value: &odd},
			PartitionChangeRecord{TopicID: Uuid{byte(i)}, PartitionID: int32(i), Leader: ptr(int32(i % 3)), ISR: []int32{1, 2}})
	}
	envs := make([]envelope, len(recs))
	for i, r := range recs {
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		envs[i] = envelope{Type: r.Type(), Version: r.Version(), Data: data}
	}
	want, err := json.Marshal(envs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeRecords(recs...)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("parallel encoding differs at byte %d: %.80q, want %.80q", i, got[i:], want[i:])
	}
	back, err := DecodeRecords(got)
	if err != nil {
		t.Fatal(err)
	}
	seq := make([]Record, len(envs))
	for i, e := range envs {
		if seq[i], err = decodeEnvelope(e); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(back, seq) {
		t.Fatal("parallel decoding differs from one record at a time")
	}

	// Two bad records far apart: the first in entry order is reported.
	envs[len(envs)-10].Type = 998
	envs[parallelRecords+5].Type = 997
	entry, _ := json.Marshal(envs)
	if _, err := DecodeRecords(entry); !errors.Is(err, ErrInvalidRecord) || !strings.Contains(err.Error(), "997") {
		t.Fatalf("two bad records: %v, want the first (type 997)", err)
	}
}
