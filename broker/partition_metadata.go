package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/petrel-broker/petrel/metadata"
	"github.com/petrel-broker/petrel/segment"
)

// partitionMetadataFile holds the topic id in each partition directory (KIP-516). It is
// written with the log's first segment (segment.Log.WriteMetadataFile), so a directory
// with records has a durable one and creating a replica costs no fsync for it; a
// missing or malformed one is ignored at open (partitionManager.open): the topic id
// comes from the image and the file is rewritten.
const partitionMetadataFile = "partition.metadata"

// readPartitionMetadata reads a replica's partition.metadata. A missing file is
// os.ErrNotExist; one that is empty, cut short or otherwise malformed is
// errMalformedPartitionMetadata.
func readPartitionMetadata(dir string) (metadata.Uuid, error) {
	// One open and one read (segment.ReadFile): it runs for every replica at start.
	data, err := segment.ReadFile(filepath.Join(dir, partitionMetadataFile))
	if err != nil {
		return metadata.ZeroUuid, err
	}
	return parsePartitionMetadata(dir, data)
}

// errMalformedPartitionMetadata is a partition.metadata that does not hold a topic id in
// Kafka's format: torn by a crash of a build that wrote it without an fsync, or damaged.
var errMalformedPartitionMetadata = errors.New("malformed partition.metadata")

// parsePartitionMetadata parses Kafka's format, "version: 0" then "topic_id: <id>", as
// Kafka's PartitionMetadataFile reads it: an unknown version, a missing or invalid (or
// zero) topic id, or anything after it but blank lines is errMalformedPartitionMetadata.
func parsePartitionMetadata(dir string, data []byte) (metadata.Uuid, error) {
	bad := func(why string) (metadata.Uuid, error) {
		return metadata.ZeroUuid, fmt.Errorf("%w: %s: %s", errMalformedPartitionMetadata, filepath.Join(dir, partitionMetadataFile), why)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) < 2 {
		return bad("fewer than two lines")
	}
	if v, ok := strings.CutPrefix(lines[0], "version:"); !ok || strings.TrimSpace(v) != "0" {
		return bad(fmt.Sprintf("version line %q", lines[0]))
	}
	v, ok := strings.CutPrefix(lines[1], "topic_id:")
	if !ok {
		return bad(fmt.Sprintf("topic id line %q", lines[1]))
	}
	id, err := metadata.ParseUuid(strings.TrimSpace(v))
	if err != nil || id == metadata.ZeroUuid {
		return bad(fmt.Sprintf("topic id %q", strings.TrimSpace(v)))
	}
	for _, l := range lines[2:] {
		if strings.TrimSpace(l) != "" {
			return bad(fmt.Sprintf("trailing line %q", l))
		}
	}
	return id, nil
}

// partitionMetadata is the partition.metadata of topic id (Kafka's format).
func partitionMetadata(id metadata.Uuid) []byte {
	return []byte("version: 0\ntopic_id: " + id.String() + "\n")
}

// partitionMetadataFiles shares one partition.metadata per topic among the replicas
// opened together (openConcurrently): an unborn log keeps its file until its first
// segment is born, so idle replicas hold a pointer each, not a copy.
type partitionMetadataFiles struct {
	mu    sync.Mutex
	files map[metadata.Uuid]*segment.DirFile
}

func newPartitionMetadataFiles() *partitionMetadataFiles {
	return &partitionMetadataFiles{files: map[metadata.Uuid]*segment.DirFile{}}
}

// get returns the partition.metadata of topic id.
func (f *partitionMetadataFiles) get(id metadata.Uuid) *segment.DirFile {
	f.mu.Lock()
	defer f.mu.Unlock()
	file := f.files[id]
	if file == nil {
		file = &segment.DirFile{Name: partitionMetadataFile, Data: partitionMetadata(id)}
		f.files[id] = file
	}
	return file
}
