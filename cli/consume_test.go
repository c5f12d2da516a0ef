package cli

import (
	"bufio"
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordFormat(t *testing.T) {
	ts := time.UnixMilli(1700000000123)
	rec := &kgo.Record{Key: []byte("k"), Value: []byte("v"), Partition: 2, Offset: 41, Timestamp: ts}
	nulls := &kgo.Record{Partition: 0, Offset: 0, Timestamp: ts}
	cases := []struct {
		name   string
		format recordFormat
		rec    *kgo.Record
		want   string
	}{
		{"value only", recordFormat{separator: "\t"}, rec, "v\n"},
		{"key", recordFormat{key: true, separator: "\t"}, rec, "k\tv\n"},
		{"all fields in kafka's order", recordFormat{key: true, offset: true, partition: true, timestamp: true, separator: "\t"}, rec,
			"CreateTime:1700000000123\tPartition:2\tOffset:41\tk\tv\n"},
		{"custom separator", recordFormat{key: true, offset: true, separator: "|"}, rec, "Offset:41|k|v\n"},
		{"null key and value", recordFormat{key: true, separator: "\t"}, nulls, "null\tnull\n"},
		{"empty value", recordFormat{separator: "\t"}, &kgo.Record{Value: []byte{}}, "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := bufio.NewWriter(&out)
			tc.format.write(w, tc.rec)
			w.Flush()
			if out.String() != tc.want {
				t.Fatalf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}

func TestParseStartOffset(t *testing.T) {
	for _, ok := range []string{"earliest", "latest", "0", "12"} {
		if _, err := parseStartOffset(ok); err != nil {
			t.Fatalf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-1", "first", "1.5"} {
		if _, err := parseStartOffset(bad); err == nil {
			t.Fatalf("%q: no error", bad)
		}
	}
}
