package broker

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkFetchCatchUp measures the broker's side of a catch-up consume: Fetch v12
// requests for 1 MiB per partition, over loopback TCP, answered from the page cache,
// by a raw client that reads each frame into a reused buffer and decodes nothing (so
// the client's cost is a read per frame). 1 KiB incompressible records, 64 MiB per
// partition, compression off. Bytes are response bytes.
//
//	go test -run XXX -bench BenchmarkFetchCatchUp -benchtime 3s ./broker/
func BenchmarkFetchCatchUp(b *testing.B) {
	for _, partitions := range []int{1, 6} {
		b.Run(fmt.Sprintf("partitions=%d", partitions), func(b *testing.B) {
			br := startTestBroker(b, "", map[string]string{"log.flush.interval.messages": "9223372036854775807"})
			topic := fmt.Sprintf("catchup-%d", partitions)
			mustCreateTopic(b, newAdmin(b, br), topic, int32(partitions), nil)
			const perPartition = 64 << 10 // records of 1 KiB: 64 MiB
			prod := newClient(b, br, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.LeaderAck()),
				kgo.DisableIdempotentWrite(), kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			value := make([]byte, 1024)
			for p := range partitions {
				for range perPartition {
					rand.Read(value)
					prod.Produce(testContext(b), &kgo.Record{Value: append([]byte(nil), value...), Partition: int32(p)}, nil)
				}
			}
			if err := prod.Flush(testContext(b)); err != nil {
				b.Fatal(err)
			}
			c, err := net.DialTimeout("tcp", br.Addr().String(), 10*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench"))
			req := kmsg.NewPtrFetchRequest()
			req.Version = 12
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 1, 50<<20, -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic = topic
			for p := range partitions {
				fp := kmsg.NewFetchRequestTopicPartition()
				fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = int32(p), 1<<20, -1
				ft.Partitions = append(ft.Partitions, fp)
			}
			req.Topics = append(req.Topics, ft)
			buf := make([]byte, 64<<20)
			var frame []byte
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				for p := range ft.Partitions {
					ft.Partitions[p].FetchOffset = int64(i*1000) % (perPartition - 2000)
				}
				req.Topics[0] = ft
				frame = formatter.AppendRequest(frame[:0], req, int32(i))
				if _, err := c.Write(frame); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf[:4]); err != nil {
					b.Fatal(err)
				}
				n := int(binary.BigEndian.Uint32(buf[:4]))
				if _, err := io.ReadFull(c, buf[:n]); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(n + 4))
			}
		})
	}
}
