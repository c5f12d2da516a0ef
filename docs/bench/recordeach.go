//go:build ignore

// Recordeach (go run docs/bench/recordeach.go) writes one record of --record-size random
// bytes to every partition of every topic of the cluster whose name starts with
// --prefix, with a default franz-go producer (acks=all, idempotent) and compression
// off, and prints the records written and the seconds as JSON. cluster-scale.sh runs
// it (PETREL_RECORD_EACH=1) so that each partition is written to once, as in a cluster
// in use: each replica then has its directory and segment files, which a start lists.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bootstrap := flag.String("bootstrap-server", "127.0.0.1:9092", "a broker's host:port")
	prefix := flag.String("prefix", "t", "write to the topics whose names start with this")
	size := flag.Int("record-size", 100, "value size in bytes")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(*bootstrap), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		fail(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		fail(err)
	}
	var records []*kgo.Record
	for _, t := range topics.Sorted() {
		if !strings.HasPrefix(t.Topic, *prefix) {
			continue
		}
		for p := range t.Partitions {
			value := make([]byte, *size)
			rand.Read(value)
			records = append(records, &kgo.Record{Topic: t.Topic, Partition: p, Value: value})
		}
	}
	start := time.Now()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		fail(err)
	}
	json.NewEncoder(os.Stdout).Encode(map[string]any{"records": len(records), "seconds": time.Since(start).Seconds()})
}
func fail(err error) {
	fmt.Fprintln(os.Stderr, "recordeach:", err)
	os.Exit(1)
}
