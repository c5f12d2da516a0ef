package clientcmd

import (
	"strings"
	"testing"
)

func TestProducerSettings(t *testing.T) {
	for _, acks := range []string{"all", "ALL", "-1", "1", "0"} {
		for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd", "ZSTD"} {
			if _, err := (ProducerSettings{Acks: acks, Compression: codec}).Options(); err != nil {
				t.Fatalf("acks %s compression %s: %v", acks, codec, err)
			}
		}
	}
	if _, err := (ProducerSettings{Acks: "2", Compression: "none"}).Options(); err == nil || !strings.Contains(err.Error(), "--acks") {
		t.Fatalf("acks 2: %v", err)
	}
	if _, err := (ProducerSettings{Acks: "all", Compression: "brotli"}).Options(); err == nil || !strings.Contains(err.Error(), "--compression") {
		t.Fatalf("brotli: %v", err)
	}
}
