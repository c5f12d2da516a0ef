package broker

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

// TestDataDirLock: a second broker on a data directory in use (here of this process)
// is refused at once with the holder's pid, before it opens anything; once the first
// has shut down, or been killed, a broker starts on the directory again.
func TestDataDirLock(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	start := time.Now()
	second, err := Start(Config{NodeID: 0, DataDir: dir, Listen: "127.0.0.1:0", RaftListen: "127.0.0.1:0"})
	var inUse *DataDirInUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() || inUse.Dir != dir {
		if second != nil {
			second.Shutdown(context.Background())
		}
		t.Fatalf("a second broker on %s: %v, want in use by process %d", dir, err, os.Getpid())
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("the refusal took %s", took)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b = startTestBroker(t, dir, nil)
	b.Kill()
	startTestBroker(t, dir, nil)
}
