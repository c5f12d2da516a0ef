// Package compress is Kafka's record compression: the codecs a record batch's
// attributes name (1 gzip, 2 snappy, 3 lz4, 4 zstd), read as bounded streams and written
// in the framings Kafka's own clients write, with pooled readers and writers.
//
// It is a leaf: it imports nothing of Petrel's. The record check and recompression on
// the produce path, the time index's look inside compressed batches and the log
// cleaner all use it, so one codec table and one limit hold everywhere.
//
// Decompression never produces more than the limit its Readers were made with: a
// stream that would is ErrTooLarge, found without decompressing the rest (a snappy
// block's declared size, zstd's window and memory, or the bytes read so far).
package compress
