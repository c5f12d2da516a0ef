package broker

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestSCRAMPasswordsNeverReachTheMetadataLog (DESIGN.md X5): after credentials are
// set with AlterUserScramCredentials and the node stops (writing its metadata log
// and snapshot), no file of the data directory holds the password: SCRAM records
// carry salt, iterations and derived keys only.
func TestSCRAMPasswordsNeverReachTheMetadataLog(t *testing.T) {
	dir := t.TempDir()
	b := startTestBroker(t, dir, nil)
	const password = "x5-password-never-stored-9f3c"
	ctx := testContext(t)
	res, err := newAdmin(t, b).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "x5-user", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: password},
		{User: "x5-user", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password},
	})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	described, err := newAdmin(t, b).DescribeUserSCRAMs(ctx, "x5-user")
	if err != nil || len(described["x5-user"].CredInfos) != 2 {
		t.Fatalf("credentials not stored: %v %v", described, err)
	}
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(data, []byte(password)) {
			t.Errorf("%s holds the password", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no file written in the data directory")
	}
}
