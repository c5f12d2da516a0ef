package broker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/petrel-broker/petrel/compress"
	"github.com/petrel-broker/petrel/config"
	"github.com/petrel-broker/petrel/internal/testwait"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/segment"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// rcIdempotent gives batch an (unknown, so accepted) producer id, epoch and base
// sequence and recomputes its CRC.
func rcIdempotent(batch []byte, producerID int64) []byte {
	binary.BigEndian.PutUint64(batch[43:], uint64(producerID))
	binary.BigEndian.PutUint16(batch[51:], 3)
	binary.BigEndian.PutUint32(batch[53:], 0)
	binary.BigEndian.PutUint32(batch[17:], segment.CRC32C(batch[21:]))
	return batch
}

// rcDecompress decompresses section with codec through the broker's own strict
// streaming readers (compress.Readers) and, to compare, kgo's.
func rcDecompress(t *testing.T, section []byte, codec int8) []byte {
	t.Helper()
	if codec == 0 {
		return section
	}
	r, release, err := compress.NewReaders(64<<20).Open(codec, section)
	if err != nil {
		t.Fatalf("codec %d: %v", codec, err)
	}
	defer release()
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("codec %d: the broker's reader: %v", codec, err)
	}
	viaKgo, err := kgo.DefaultDecompressor().Decompress(section, kgo.CompressionCodecType(codec))
	if err != nil || !bytes.Equal(viaKgo, raw) {
		t.Fatalf("codec %d: kgo decompresses differently: %v", codec, err)
	}
	return raw
}

// TestCompressionType_Produce: every source codec produced to a topic of every
// compression.type is stored with the topic's codec (producer: the batch's), the same
// records byte for byte, the producer's header fields and a valid CRC; a consumer reads
// the records back.
func TestCompressionType_Produce(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	cl := newClient(t, b)
	section := rvGoodSection(40, 300, true, 7)
	for _, target := range config.CompressionTypes {
		topic := "ct-" + target
		mustCreateTopic(t, adm, topic, 1, map[string]*string{"compression.type": kmsg.StringPtr(target)})
		for _, src := range rvCodecs {
			batch := rcIdempotent(rvBatch(rvCompress(t, section, src.codec), 40, src.codec), 9000+int64(src.codec))
			if code, msg := produceRaw(t, cl, topic, bytes.Clone(batch)); code != 0 {
				t.Fatalf("%s from %s: code %d (%s)", target, src.name, code, msg)
			}
		}
		batches := fetchBatches(t, b, topic)
		if len(batches) != len(rvCodecs) {
			t.Fatalf("%s: %d batches stored, %d produced", target, len(batches), len(rvCodecs))
		}
		for i, rb := range batches {
			src := rvCodecs[i]
			want := src.codec
			if n := segment.CompressionCodecs[target]; n != segment.KeepCodec {
				want = n
			}
			if got := int8(rb.Attributes & 7); got != want {
				t.Errorf("%s from %s: stored with codec %d, expected %d", target, src.name, got, want)
			}
			raw := rb.AppendTo(nil)
			if crc := segment.CRC32C(raw[21:]); crc != uint32(rb.CRC) {
				t.Errorf("%s from %s: CRC %#x, computed %#x", target, src.name, uint32(rb.CRC), crc)
			}
			if rb.ProducerID != 9000+int64(src.codec) || rb.ProducerEpoch != 3 || rb.FirstSequence != 0 || rb.NumRecords != 40 ||
				rb.LastOffsetDelta != 39 || rb.FirstTimestamp != 1_700_000_000_000 || rb.MaxTimestamp != 1_700_000_000_000 || rb.Attributes&^7 != 0 {
				t.Errorf("%s from %s: header %+v", target, src.name, rb)
			}
			if got := rcDecompress(t, rb.Records, int8(rb.Attributes&7)); !bytes.Equal(got, section) {
				t.Errorf("%s from %s: the records changed", target, src.name)
			}
		}
		cons := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		for got := 0; got < 40*len(rvCodecs); {
			fs := cons.PollFetches(testContext(t))
			if err := fs.Err0(); err != nil {
				t.Fatalf("%s: consume: %v", target, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if want := fmt.Sprintf("key-%d", got%40); string(r.Key) != want {
					t.Fatalf("%s: record %d has key %q, expected %q", target, got, r.Key, want)
				}
				got++
			})
		}
	}
}

// TestCompressionType_Refusals: a batch that recompresses past max.message.bytes is
// MESSAGE_TOO_LARGE, records without a key on a compacted topic are INVALID_RECORD
// naming them, and undecodable data is CORRUPT_MESSAGE; nothing is written.
func TestCompressionType_Refusals(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{decompressedLimitProperty: "8388608"})
	adm := newAdmin(t, b)
	cl := newClient(t, b)
	mustCreateTopic(t, adm, "small", 1, map[string]*string{"compression.type": kmsg.StringPtr("uncompressed"), "max.message.bytes": kmsg.StringPtr("65536")})
	mustCreateTopic(t, adm, "compacted", 1, map[string]*string{"compression.type": kmsg.StringPtr("lz4"), "cleanup.policy": kmsg.StringPtr("compact")})
	mustCreateTopic(t, adm, "zstd", 1, map[string]*string{"compression.type": kmsg.StringPtr("zstd")})
	// 4 MiB of zeros in a 4 KiB gzip batch: within the decompression limit, far past
	// the topic's max.message.bytes once stored uncompressed.
	bomb := rvBatch(rvCompress(t, rvBomb(64, 64<<10), 1), 64, 1)
	if code, msg := produceRaw(t, cl, "small", bomb); code != kerr.MessageTooLarge.Code || !strings.Contains(msg, "max.message.bytes") {
		t.Errorf("a batch recompressed past max.message.bytes: code %d (%s)", code, msg)
	}
	keyless := rvBatch(rvCompress(t, rvBomb(3, 10), 2), 3, 2) // rvRecord writes null keys
	if code, msg := produceRaw(t, cl, "compacted", keyless); code != kerr.InvalidRecord.Code || !strings.Contains(msg, "without key") {
		t.Errorf("keyless records on a compacted topic: code %d (%s)", code, msg)
	}
	corrupt := rvBatch(flipByte(rvCompress(t, rvGoodSection(20, 100, true, 1), 1), 30), 20, 1)
	if code, msg := produceRaw(t, cl, "zstd", corrupt); code != kerr.CorruptMessage.Code {
		t.Errorf("undecodable gzip to a zstd topic: code %d (%s)", code, msg)
	}
	for _, topic := range []string{"small", "compacted", "zstd"} {
		if n := len(fetchBatches(t, b, topic)); n != 0 {
			t.Errorf("%s: %d batches written", topic, n)
		}
	}
}

// TestCompressionConfig: compression.type and its levels resolve as Kafka's (the
// levels' effect on the writers is segment's TestRecompressLevels).
func TestCompressionConfig(t *testing.T) {
	cfgs := func(kv ...string) map[string]config.Resolved {
		m := map[string]config.Resolved{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = config.Resolved{Value: kv[i+1]}
		}
		return m
	}
	if tc := compressionConfig(cfgs("compression.type", "producer", "compression.gzip.level", "-1", "compression.zstd.level", "3")); tc.Codec != segment.KeepCodec || tc.Opts != compress.DefaultOptions {
		t.Errorf("defaults: %+v", tc)
	}
	if tc := compressionConfig(cfgs("compression.type", "zstd", "compression.zstd.level", "-5")); tc.Codec != 4 || tc.Opts.ZstdLevel != -5 {
		t.Errorf("zstd -5: %+v", tc)
	}
	if tc := compressionConfig(cfgs("compression.type", "gzip", "compression.gzip.level", "9")); tc.Codec != 1 || tc.Opts.GzipLevel != 9 {
		t.Errorf("gzip 9: %+v", tc)
	}
}

// TestCompressionType_ZstdTopicRefusesOldFetch: as Kafka (KIP-110), a consumer's Fetch
// below v10 of a compression.type=zstd topic is UNSUPPORTED_COMPRESSION_TYPE; v10 reads
// it, and other topics are read at any version.
func TestCompressionType_ZstdTopicRefusesOldFetch(t *testing.T) {
	b := startTestBroker(t, "", nil)
	adm := newAdmin(t, b)
	cl := newClient(t, b)
	mustCreateTopic(t, adm, "zstd-topic", 1, map[string]*string{"compression.type": kmsg.StringPtr("zstd")})
	mustCreateTopic(t, adm, "any-topic", 1, nil)
	for _, topic := range []string{"zstd-topic", "any-topic"} {
		if code, msg := produceRaw(t, cl, topic, rvBatch(rvGoodSection(3, 10, true, 1), 3, 0)); code != 0 {
			t.Fatalf("%s: code %d (%s)", topic, code, msg)
		}
	}
	for _, tt := range []struct {
		topic   string
		version int16
		want    int16
	}{{"zstd-topic", 9, kerr.UnsupportedCompressionType.Code}, {"zstd-topic", 4, kerr.UnsupportedCompressionType.Code},
		{"zstd-topic", 10, 0}, {"any-topic", 4, 0}, {"any-topic", 9, 0}} {
		req := kmsg.NewPtrFetchRequest()
		req.Version, req.ReplicaID, req.MaxBytes = tt.version, -1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = tt.topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(kmsg.Fetch.Int16(), tt.version) // kgo sends the highest version both sides allow
		resp, err := req.RequestWith(testContext(t), newClient(t, b, kgo.MaxVersions(vs)))
		if err != nil {
			t.Fatal(err)
		}
		sp := resp.Topics[0].Partitions[0]
		if resp.Version != tt.version {
			t.Fatalf("sent fetch v%d, expected v%d", resp.Version, tt.version)
		}
		if sp.ErrorCode != tt.want || tt.want == 0 && len(sp.RecordBatches) == 0 {
			t.Errorf("%s fetch v%d: code %d, %d bytes; expected code %d", tt.topic, tt.version, sp.ErrorCode, len(sp.RecordBatches), tt.want)
		}
	}
}

// TestCompressionType_BrokerDefaultAndDynamic: the broker's compression.type is the
// default of topics without an override, and a topic's compression.type changed at run
// time applies to the next append.
func TestCompressionType_BrokerDefaultAndDynamic(t *testing.T) {
	b := startTestBroker(t, "", map[string]string{"compression.type": "lz4"})
	adm := newAdmin(t, b)
	cl := newClient(t, b)
	mustCreateTopic(t, adm, "inherits", 1, nil)
	mustCreateTopic(t, adm, "overrides", 1, map[string]*string{"compression.type": kmsg.StringPtr("producer")})
	batch := rvBatch(rvCompress(t, rvGoodSection(4, 100, true, 2), 2), 4, 2) // snappy
	codecs := func(topic string) (out []int16) {
		for _, rb := range fetchBatches(t, b, topic) {
			out = append(out, rb.Attributes&7)
		}
		return out
	}
	for _, topic := range []string{"inherits", "overrides"} {
		if code, msg := produceRaw(t, cl, topic, bytes.Clone(batch)); code != 0 {
			t.Fatalf("%s: code %d (%s)", topic, code, msg)
		}
	}
	if got := codecs("inherits"); len(got) != 1 || got[0] != 3 {
		t.Fatalf("a topic under the broker's compression.type=lz4 stored codecs %v", got)
	}
	if got := codecs("overrides"); len(got) != 1 || got[0] != 2 {
		t.Fatalf("a compression.type=producer topic stored codecs %v", got)
	}
	resp, err := adm.AlterTopicConfigs(testContext(t), []kadm.AlterConfig{{Name: "compression.type", Value: kmsg.StringPtr("zstd")}}, "overrides")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp {
		if r.Err != nil {
			t.Fatalf("alter %s: %v %s", r.Name, r.Err, r.ErrMessage)
		}
	}
	testwait.For(t, 10*time.Second, func() error {
		if code, msg := produceRaw(t, cl, "overrides", bytes.Clone(batch)); code != 0 {
			return fmt.Errorf("code %d (%s)", code, msg)
		}
		if got := codecs("overrides"); got[len(got)-1] != 4 {
			return fmt.Errorf("stored codecs %v", got)
		}
		return nil
	})
}
