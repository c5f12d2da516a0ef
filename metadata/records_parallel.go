package metadata

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"sync"
)

// parallelRecords is the record count from which EncodeRecords and DecodeRecords
// marshal and unmarshal the records of an entry on several goroutines: a controlled
// shutdown at 100,000 partitions writes 33,334 records in one entry, and the
// controller waits for its encoding and its own apply (decoding) before it answers the
// stopping broker.
const parallelRecords = 1024

// forChunks runs fn over [0, n) in contiguous chunks, one goroutine per core.
func forChunks(n int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+parallelRecords-1)/parallelRecords)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	size := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += size {
		wg.Go(func() { fn(lo, min(lo+size, n)) })
	}
	wg.Wait()
}

// encodeRecordsParallel is EncodeRecords for many records: each record's JSON is
// marshalled on several goroutines, and the envelope array is written around them
// byte for byte as json.Marshal writes it (a json.Marshal output is already compact
// and HTML-escaped, which is all that Marshal would do to a RawMessage).
func encodeRecordsParallel(records []Record) ([]byte, error) {
	datas := make([][]byte, len(records))
	errs := make([]error, len(records))
	forChunks(len(records), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			datas[i], errs[i] = json.Marshal(records[i])
		}
	})
	size := 2
	for i, d := range datas {
		if errs[i] != nil {
			return nil, errs[i]
		}
		size += len(d) + 24
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, r := range records {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"t":`...)
		b = strconv.AppendUint(b, uint64(r.Type()), 10)
		b = append(b, `,"v":`...)
		b = strconv.AppendUint(b, uint64(r.Version()), 10)
		b = append(b, `,"d":`...)
		b = append(b, datas[i]...)
		b = append(b, '}')
	}
	return append(b, ']'), nil
}

// decodeEnvelopes decodes the records of envs (DecodeRecords after the envelope
// array), on several goroutines when there are many; the error is the first record's
// in entry order.
func decodeEnvelopes(envs []envelope) ([]Record, error) {
	out := make([]Record, len(envs))
	errs := make([]error, len(envs))
	decode := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i], errs[i] = decodeEnvelope(envs[i])
			if errs[i] != nil {
				return // the rest of the chunk is not needed: an earlier error wins
			}
		}
	}
	if len(envs) >= parallelRecords {
		forChunks(len(envs), decode)
	} else {
		decode(0, len(envs))
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// decodeEnvelope decodes one record. An unknown type or a newer version than this
// build knows is an error: the node must not guess.
func decodeEnvelope(e envelope) (Record, error) {
	r, err := newRecord(e.Type)
	if err != nil {
		return nil, err
	}
	if e.Version > r.Version() {
		return nil, fmt.Errorf("%w: record type %d version %d is newer than this build's %d", ErrInvalidRecord, e.Type, e.Version, r.Version())
	}
	if err := json.Unmarshal(e.Data, r); err != nil {
		return nil, fmt.Errorf("%w: record type %d: %v", ErrInvalidRecord, e.Type, err)
	}
	return derefRecord(r), nil
}
