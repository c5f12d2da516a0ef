package segment

import "hash/crc32"

// CRC32C is the CRC-32C (Castagnoli) of b, the checksum of Kafka's record batches, over
// the one table of the module: other packages use it for their own checksummed formats.
func CRC32C(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
