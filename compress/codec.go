package compress

import (
	"errors"
	"strconv"
)

// The codecs as a record batch's attributes name them (the low three bits).
const (
	None   int8 = 0
	Gzip   int8 = 1
	Snappy int8 = 2
	LZ4    int8 = 3
	Zstd   int8 = 4
)

// Names are the codecs' names as Kafka's compression.type spells them, by codec.
var Names = [...]string{"uncompressed", "gzip", "snappy", "lz4", "zstd"}

// ErrTooLarge means compressed data decompresses past the limit of its Readers.
var ErrTooLarge = errors.New("records decompress past the limit")

// Name is codec's name, or "codec N" for one Kafka does not define.
func Name(codec int8) string {
	if codec >= 0 && int(codec) < len(Names) {
		return Names[codec]
	}
	return "codec " + strconv.Itoa(int(codec))
}
