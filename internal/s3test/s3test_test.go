package s3test

import (
	"fmt"
	"strings"
	"testing"
)

// outcomeTB records how Start ended the test instead of ending it.
type outcomeTB struct {
	testing.TB
	skipped, failed string
}

type stopped struct{}

func (o *outcomeTB) Helper() {}
func (o *outcomeTB) Skipf(format string, args ...any) {
	o.skipped = fmt.Sprintf(format, args...)
	panic(stopped{})
}
func (o *outcomeTB) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	panic(stopped{})
}

func startWithoutBinary(t *testing.T, require string) *outcomeTB {
	t.Setenv("PETREL_VERSITYGW", "")
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOBIN", "")
	t.Setenv("GOPATH", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv(RequireEnv, require)
	o := &outcomeTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(stopped); !ok {
					panic(r)
				}
			}
		}()
		Start(o)
	}()
	return o
}

func TestMissingServerSkipsUnlessRequired(t *testing.T) {
	o := startWithoutBinary(t, "")
	if o.skipped == "" || o.failed != "" || !strings.Contains(o.skipped, InstallCommand) {
		t.Fatalf("without the binary: skipped %q, failed %q; want a skip naming %q", o.skipped, o.failed, InstallCommand)
	}
	o = startWithoutBinary(t, "1")
	if o.failed == "" || o.skipped != "" || !strings.Contains(o.failed, RequireEnv+"=1") {
		t.Fatalf("without the binary and %s=1: skipped %q, failed %q; want a failure", RequireEnv, o.skipped, o.failed)
	}
}
