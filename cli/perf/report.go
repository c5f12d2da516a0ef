package perf

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// mebibyte is the "MB" of Kafka's perf tools (1024*1024 bytes).
const mebibyte = 1 << 20

// maxLatency is the largest latency the histogram tracks; larger ones count as this.
const maxLatency = time.Hour

// perfStats accumulates a perf run's counts and latencies. Produce promises call
// recordAck from kgo's goroutines and the progress reporter reads windows, so mu guards
// every field.
type perfStats struct {
	mu        sync.Mutex
	start     time.Time               // when the run began
	end       time.Time               // when the last result arrived (set by finish)
	records   int64                   // records that succeeded
	bytes     int64                   // payload bytes of those records
	errors    int64                   // records that failed
	firstErr  error                   // the first failure
	latencies *hdrhistogram.Histogram // per-record latency in microseconds; nil for consume

	window perfWindow // since the last progress line
}

// perfWindow is one progress interval's figures.
type perfWindow struct {
	start       time.Time
	records     int64
	bytes       int64
	latencySum  time.Duration
	latencyMax  time.Duration
	withLatency bool
}

func newPerfStats(withLatency bool) *perfStats {
	now := time.Now()
	s := &perfStats{start: now, window: perfWindow{start: now, withLatency: withLatency}}
	if withLatency {
		s.latencies = hdrhistogram.New(1, maxLatency.Microseconds(), 3)
	}
	return s
}

// recordAck counts one produced record's outcome and its ack latency.
func (s *perfStats) recordAck(latency time.Duration, size int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errors++
		if s.firstErr == nil {
			s.firstErr = err
		}
		return
	}
	s.records++
	s.bytes += int64(size)
	_ = s.latencies.RecordValue(min(max(latency.Microseconds(), 1), maxLatency.Microseconds()))
	s.window.records++
	s.window.bytes += int64(size)
	s.window.latencySum += latency
	s.window.latencyMax = max(s.window.latencyMax, latency)
}

// recordConsumed counts consumed records and their bytes.
func (s *perfStats) recordConsumed(records, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records += records
	s.bytes += bytes
	s.window.records += records
	s.window.bytes += bytes
}

// progressLine returns the line for the window that ends now, kafka-*-perf-test style,
// and starts a new window.
func (s *perfStats) progressLine(verb string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	w := s.window
	s.window = perfWindow{start: now, withLatency: w.withLatency}
	secs := now.Sub(w.start).Seconds()
	line := fmt.Sprintf("%d records %s, %.1f records/sec (%.2f MB/sec)", w.records, verb,
		rate(float64(w.records), secs), rate(float64(w.bytes)/mebibyte, secs))
	if w.withLatency {
		avg := 0.0
		if w.records > 0 {
			avg = ms(w.latencySum) / float64(w.records)
		}
		line += fmt.Sprintf(", %.1f ms avg latency, %.1f ms max latency", avg, ms(w.latencyMax))
	}
	return line + "."
}

// finish marks the end of the run.
func (s *perfStats) finish() {
	s.mu.Lock()
	s.end = time.Now()
	s.mu.Unlock()
}

// perfSummary is a run's final figures, printed as a table or as JSON.
type perfSummary struct {
	Records          int64           `json:"records"`
	Errors           int64           `json:"errors"`
	Bytes            int64           `json:"bytes"`
	ElapsedSeconds   float64         `json:"elapsed_seconds"`
	RecordsPerSecond float64         `json:"records_per_second"`
	MBPerSecond      float64         `json:"mb_per_second"`
	LatencyMs        *latencySummary `json:"latency_ms,omitempty"`
}

// latencySummary holds latency figures in milliseconds.
type latencySummary struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func (s *perfStats) summary() perfSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.end
	if end.IsZero() {
		end = time.Now()
	}
	secs := end.Sub(s.start).Seconds()
	sum := perfSummary{
		Records:          s.records,
		Errors:           s.errors,
		Bytes:            s.bytes,
		ElapsedSeconds:   secs,
		RecordsPerSecond: rate(float64(s.records), secs),
		MBPerSecond:      rate(float64(s.bytes)/mebibyte, secs),
	}
	if s.latencies != nil {
		h := s.latencies
		usToMs := func(us int64) float64 { return float64(us) / 1000 }
		sum.LatencyMs = &latencySummary{
			Avg:  h.Mean() / 1000,
			P50:  usToMs(h.ValueAtQuantile(50)),
			P95:  usToMs(h.ValueAtQuantile(95)),
			P99:  usToMs(h.ValueAtQuantile(99)),
			P999: usToMs(h.ValueAtQuantile(99.9)),
			Max:  usToMs(h.Max()),
		}
	}
	return sum
}

// writeSummary prints the summary as an aligned table, or as one JSON object.
func writeSummary(w io.Writer, sum perfSummary, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(sum)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "RECORDS\tERRORS\tMB\tSECONDS\tRECORDS/S\tMB/S\t"
	row := fmt.Sprintf("%d\t%d\t%.2f\t%.2f\t%.1f\t%.2f\t", sum.Records, sum.Errors,
		float64(sum.Bytes)/mebibyte, sum.ElapsedSeconds, sum.RecordsPerSecond, sum.MBPerSecond)
	if l := sum.LatencyMs; l != nil {
		header += "AVG MS\tP50 MS\tP95 MS\tP99 MS\tP99.9 MS\tMAX MS\t"
		row += fmt.Sprintf("%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t", l.Avg, l.P50, l.P95, l.P99, l.P999, l.Max)
	}
	fmt.Fprintln(tw, header)
	fmt.Fprintln(tw, row)
	return tw.Flush()
}

// startProgress writes line() to w every interval until the returned stop is called;
// stop waits for the reporter to end.
func startProgress(w io.Writer, interval time.Duration, line func() string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintln(w, line())
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func rate(n, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return n / secs
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
