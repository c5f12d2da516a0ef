package replication

import (
	"bytes"
	"testing"

	"github.com/petrel-broker/petrel/rpc"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzFetchParts decodes arbitrary bytes as a Fetch response (v4-v17) and checks that
// the bytes-plus-sections encoder, with every other non-empty record set moved to a
// file section, gives exactly kmsg's encoding.
func FuzzFetchParts(f *testing.F) {
	file, _ := sectionsFile(f, 1<<16)
	for v := int16(4); v <= 17; v++ {
		r, secs := fetchCase(v, 2, 9, file, 1<<16)
		want, _ := encodeBoth(f, r, secs)
		f.Add(uint8(v-4), want)
	}
	f.Fuzz(func(t *testing.T, version uint8, data []byte) {
		r := kmsg.NewPtrFetchResponse()
		r.Version = 4 + int16(version%14)
		if r.ReadFrom(data) != nil || !fetchPartsEncodable(r) {
			return
		}
		want := r.AppendTo(nil)
		// Move the record sets of even partitions into the file, back to back.
		if err := file.Truncate(0); err != nil {
			t.Fatal(err)
		}
		var secs []rpc.FileSection
		var at int64
		i := 0
		for ti := range r.Topics {
			for pi := range r.Topics[ti].Partitions {
				sp := &r.Topics[ti].Partitions[pi]
				var sec rpc.FileSection
				if i%2 == 0 && len(sp.RecordBatches) > 0 {
					if _, err := file.WriteAt(sp.RecordBatches, at); err != nil {
						t.Fatal(err)
					}
					sec = rpc.FileSection{File: file, Offset: at, Size: int64(len(sp.RecordBatches))}
					at += sec.Size
					sp.RecordBatches = []byte{}
				}
				secs = append(secs, sec)
				i++
			}
		}
		p := &rpc.Parts{}
		appendFetchParts(p, r, func(i int) rpc.FileSection { return secs[i] })
		got, err := p.AppendFlat(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, got) {
			t.Fatalf("v%d: differs from kmsg at byte %d (%d vs %d bytes)", r.Version, firstDiff(want, got), len(got), len(want))
		}
	})
}
