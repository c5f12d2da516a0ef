package integration

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/petrel-broker/petrel/internal/s3test"
)

// TestTieredStorage_Walkthrough runs docs/tiered-storage.md's worked example as
// written (runWalkthrough): versitygw on a local directory, petrel dev with the
// rsm.config.* settings, a tiered topic with small segments, records produced, the
// local log start moving past 0 while the segments land in the bucket, and
// `petrel log-dirs describe` showing the remote size.
func TestTieredStorage_Walkthrough(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	bin := s3test.BinaryOrSkip(t)
	runWalkthrough(t, "tiered-storage.md", "## Worked example: a local S3 server", 8,
		[]string{"node0.log", "s3.log"}, filepath.Dir(bin))
}
