package cli

import (
	"strings"
	"testing"
)

func TestLineProducerRecord(t *testing.T) {
	p := &lineProducer{topic: "t", keySeparator: "::", partition: 3}
	rec, err := p.record([]byte("k::v::w"), 1)
	if err != nil || string(rec.Key) != "k" || string(rec.Value) != "v::w" || rec.Partition != 3 || rec.Topic != "t" {
		t.Fatalf("record %+v, %v", rec, err)
	}
	if _, err := p.record([]byte("k:v"), 7); err == nil || err.Error() != `no key separator "::" found on line number 7: "k:v"` {
		t.Fatalf("error %v", err)
	}
	p = &lineProducer{topic: "t", partition: -1}
	rec, err = p.record([]byte("a:b"), 1)
	if err != nil || rec.Key != nil || string(rec.Value) != "a:b" {
		t.Fatalf("record without separator %+v, %v", rec, err)
	}
}

func TestReadLines(t *testing.T) {
	lines := make(chan []byte)
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- readLines(strings.NewReader("a\r\n\nb\nlast"), lines, done) }()
	var got []string
	for l := range lines {
		got = append(got, string(l))
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "a||b|last" {
		t.Fatalf("lines %q", got)
	}
}
