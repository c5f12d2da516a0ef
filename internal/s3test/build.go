package s3test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Version is the versitygw release the tests run.
const Version = "v1.8.0"

// buildTimeout bounds building versitygw from the Go module proxy: about 4 minutes of
// CPU on a cold build cache; under go test's default 10-minute limit.
const buildTimeout = 8 * time.Minute

// build installs versitygw into the user's cache directory when no binary is found, so
// that the README's one test command needs nothing installed beforehand. Test binaries
// of several packages may ask at once: an exclusive lock on the directory makes one
// build and the others wait for it. It returns the binary's path.
func build() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "petrel", "versitygw-"+Version)
	bin := filepath.Join(dir, "versitygw")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck
	if info, err := os.Stat(bin); err == nil && !info.IsDir() {
		return bin, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/versity/versitygw/cmd/versitygw@"+Version)
	cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: %v: %s", cmd, err, out)
	}
	return bin, nil
}
