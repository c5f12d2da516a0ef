package cli

import (
	"bytes"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := RunWithIO([]string{"petrel", "version"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, errOut.String())
	}
	if !strings.HasPrefix(out.String(), "petrel "+Version) {
		t.Fatalf("version output %q", out.String())
	}
}

func TestHelpListsCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := RunWithIO([]string{"petrel", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("exit code %d, stderr %q", code, errOut.String())
	}
	if !strings.Contains(out.String(), "version") {
		t.Fatalf("help does not list the version command: %q", out.String())
	}
}

func TestUnknownCommandFails(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := RunWithIO([]string{"petrel", "no-such-command"}, &out, &errOut); code == 0 {
		t.Fatalf("unknown command exited 0; stdout %q", out.String())
	}
}
