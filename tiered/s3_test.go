package tiered

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/s3test"
)

// segmentFiles writes a segment's files to a temporary directory and returns them with
// their contents by index type ("log" for the log).
func segmentFiles(t *testing.T, withTxnIndex bool) (LogSegmentData, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	content := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return b
	}
	want := map[string][]byte{
		"log":                          content(3<<20 + 17), // larger than one read buffer, odd size
		IndexOffset.String():           content(8 * 100),
		IndexTimestamp.String():        content(12 * 100),
		IndexProducerSnapshot.String(): content(300),
		IndexLeaderEpoch.String():      []byte("0\n2\n3 1234\n5 1500\n"),
	}
	if withTxnIndex {
		want[IndexTransaction.String()] = content(34 * 3)
	}
	write := func(name, kind string) string {
		if want[kind] == nil {
			return ""
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, want[kind], 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return LogSegmentData{
		LogSegment:       write("00000000000000001234.log", "log"),
		OffsetIndex:      write("00000000000000001234.index", IndexOffset.String()),
		TimeIndex:        write("00000000000000001234.timeindex", IndexTimestamp.String()),
		TransactionIndex: write("00000000000000001234.txnindex", IndexTransaction.String()),
		ProducerSnapshot: write("00000000000000002001.snapshot", IndexProducerSnapshot.String()),
		LeaderEpochIndex: want[IndexLeaderEpoch.String()],
	}, want
}

func storageFor(t *testing.T, srv *s3test.Server, edit func(*S3Config)) *S3Storage {
	t.Helper()
	cfg := S3Config{
		EndpointURL: srv.Endpoint, Bucket: srv.Bucket, Region: srv.Region, PathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, KeyPrefix: "tiered/",
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := NewS3Storage(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reader returns a function that reads a fetch's stream whole, failing t on an error.
func reader(t *testing.T) func(io.ReadCloser, error) []byte {
	return func(rc io.ReadCloser, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
}

func callContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestS3SegmentCopiedReadsBackByteIdentical(t *testing.T) {
	srv := s3test.Start(t)
	s := storageFor(t, srv, nil)
	ctx := callContext(t)
	md := sampleMetadata()
	md.State = CopySegmentStarted
	data, want := segmentFiles(t, true)
	readAll := reader(t)

	if err := s.CopyLogSegmentData(ctx, md, data); err != nil {
		t.Fatal(err)
	}
	keys := srv.Keys(t, "tiered/")
	if wantKeys := slices.Sorted(slices.Values(s.Keys().All(md))); !slices.Equal(keys, wantKeys) {
		t.Fatalf("objects in the bucket:\n%q\nwant\n%q", keys, wantKeys)
	}

	log := want["log"]
	if got := readAll(s.FetchLogSegment(ctx, md, 0)); !bytes.Equal(got, log) {
		t.Fatalf("whole log: %d bytes differ from the %d copied", len(got), len(log))
	}
	for _, pos := range []int64{1, 4096, int64(len(log)) - 1} {
		if got := readAll(s.FetchLogSegment(ctx, md, pos)); !bytes.Equal(got, log[pos:]) {
			t.Errorf("log from %d: %d bytes, not the file's %d from there", pos, len(got), len(log[pos:]))
		}
	}
	for _, r := range [][2]int64{{0, 0}, {1000, 5000}, {int64(len(log)) - 10, int64(len(log)) + 100}} {
		end := min(r[1], int64(len(log))-1)
		if got := readAll(s.FetchLogSegmentRange(ctx, md, r[0], r[1])); !bytes.Equal(got, log[r[0]:end+1]) {
			t.Errorf("log [%d, %d]: %d bytes, not the file's %d", r[0], r[1], len(got), end+1-r[0])
		}
	}
	for _, typ := range IndexTypes {
		if got := readAll(s.FetchIndex(ctx, md, typ)); !bytes.Equal(got, want[typ.String()]) {
			t.Errorf("index %v: %d bytes differ from the %d copied", typ, len(got), len(want[typ.String()]))
		}
	}

	if err := s.DeleteLogSegmentData(ctx, md); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys(t, "tiered/"); len(keys) != 0 {
		t.Fatalf("after deletion the bucket still holds %q", keys)
	}
	_, err := s.FetchLogSegment(ctx, md, 0)
	var se *StorageError
	if !errors.Is(err, ErrRemoteResourceNotFound) || !errors.Is(err, ErrRemoteStorage) || !errors.As(err, &se) || se.Code != "NoSuchKey" {
		t.Fatalf("fetch after deletion = %v, want a NoSuchKey ErrRemoteResourceNotFound", err)
	}
	if err := s.DeleteLogSegmentData(ctx, md); err != nil {
		t.Fatalf("deleting again = %v, want nil", err)
	}
}

func TestS3SegmentWithoutTransactionIndex(t *testing.T) {
	srv := s3test.Start(t)
	s := storageFor(t, srv, nil)
	ctx := callContext(t)
	md := sampleMetadata()
	data, _ := segmentFiles(t, false)
	if err := s.CopyLogSegmentData(ctx, md, data); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys(t, "tiered/"); len(keys) != 5 {
		t.Fatalf("objects %q, want the log and 4 indexes", keys)
	}
	if _, err := s.FetchIndex(ctx, md, IndexTransaction); !errors.Is(err, ErrRemoteResourceNotFound) {
		t.Fatalf("FetchIndex(TRANSACTION) = %v, want ErrRemoteResourceNotFound", err)
	}
	if err := s.DeleteLogSegmentData(ctx, md); err != nil {
		t.Fatal(err)
	}
	if keys := srv.Keys(t, "tiered/"); len(keys) != 0 {
		t.Fatalf("after deletion the bucket still holds %q", keys)
	}
}

func TestS3FailuresAreTypedErrors(t *testing.T) {
	srv := s3test.Start(t)
	md := sampleMetadata()
	data, _ := segmentFiles(t, true)
	ctx := callContext(t)

	isStorageError := func(t *testing.T, what string, err error, codes ...string) {
		t.Helper()
		var se *StorageError
		if !errors.Is(err, ErrRemoteStorage) || !errors.As(err, &se) {
			t.Fatalf("%s: %v, want a StorageError", what, err)
		}
		if errors.Is(err, ErrRemoteResourceNotFound) {
			t.Fatalf("%s: %v is a missing object, want a storage failure", what, err)
		}
		if len(codes) > 0 && !slices.Contains(codes, se.Code) {
			t.Fatalf("%s: code %q, want one of %q (%v)", what, se.Code, codes, err)
		}
	}

	t.Run("bucket missing", func(t *testing.T) {
		s := storageFor(t, srv, func(c *S3Config) { c.Bucket = "no-such-bucket" })
		isStorageError(t, "copy", s.CopyLogSegmentData(ctx, md, data), "NoSuchBucket")
		_, err := s.FetchLogSegment(ctx, md, 0)
		isStorageError(t, "fetch", err, "NoSuchBucket")
	})
	t.Run("wrong credentials", func(t *testing.T) {
		s := storageFor(t, srv, func(c *S3Config) { c.SecretAccessKey = "not-the-secret" })
		isStorageError(t, "wrong secret", s.CopyLogSegmentData(ctx, md, data), "SignatureDoesNotMatch", "AccessDenied")
		s = storageFor(t, srv, func(c *S3Config) { c.AccessKeyID = "nobody" })
		_, err := s.FetchIndex(ctx, md, IndexOffset)
		// AWS answers 403 InvalidAccessKeyId; versitygw 404 XAdminUserNotFound, which must
		// not read as a missing object.
		isStorageError(t, "unknown key id", err, "InvalidAccessKeyId", "AccessDenied", "XAdminUserNotFound")
	})
	t.Run("server stopped, then back", func(t *testing.T) {
		s := storageFor(t, srv, nil)
		srv.Stop()
		start := time.Now()
		isStorageError(t, "copy to a stopped server", s.CopyLogSegmentData(ctx, md, data))
		t.Logf("a copy to a stopped server failed after %v (the SDK's retries)", time.Since(start))
		srv.Restart(t)
		if err := s.CopyLogSegmentData(ctx, md, data); err != nil {
			t.Fatalf("copy once the server is back: %v", err)
		}
	})
}

func TestS3SlowServerIsBoundedByTheContext(t *testing.T) {
	srv := s3test.Start(t)
	slow := s3test.SlowProxy(t, srv.Endpoint, time.Minute)
	s := storageFor(t, srv, func(c *S3Config) { c.EndpointURL = slow })
	md := sampleMetadata()
	data, _ := segmentFiles(t, true)
	for name, call := range map[string]func(context.Context) error{
		"copy":   func(ctx context.Context) error { return s.CopyLogSegmentData(ctx, md, data) },
		"fetch":  func(ctx context.Context) error { _, err := s.FetchLogSegment(ctx, md, 0); return err },
		"delete": func(ctx context.Context) error { return s.DeleteLogSegmentData(ctx, md) },
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		start := time.Now()
		err := call(ctx)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, ErrRemoteStorage) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s through a slow server = %v, want ErrRemoteStorage and context.DeadlineExceeded", name, err)
		}
		if took > 15*time.Second {
			t.Errorf("%s took %v with a 300ms deadline", name, took)
		}
	}
}

func TestS3ConfigCredentialsAndChecks(t *testing.T) {
	base := S3Config{Bucket: "b", Region: "us-east-1", EndpointURL: "http://127.0.0.1:1"}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := NewS3Storage(base); !errors.Is(err, ErrInvalidS3Config) {
		t.Fatalf("no credentials: %v, want ErrInvalidS3Config", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "env-id")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	if id, secret, _, err := base.credentials(); err != nil || id != "env-id" || secret != "env-secret" {
		t.Fatalf("credentials from the environment = %q, %q, %v", id, secret, err)
	}
	withKeys := base
	withKeys.AccessKeyID, withKeys.SecretAccessKey = "prop-id", "prop-secret"
	if id, secret, _, err := withKeys.credentials(); err != nil || id != "prop-id" || secret != "prop-secret" {
		t.Fatalf("the properties win over the environment: got %q, %q, %v", id, secret, err)
	}
	half := base
	half.AccessKeyID = "prop-id"
	if _, err := NewS3Storage(half); !errors.Is(err, ErrInvalidS3Config) {
		t.Fatalf("an access key id without its secret: %v, want ErrInvalidS3Config", err)
	}
	for name, edit := range map[string]func(*S3Config){
		"no bucket":    func(c *S3Config) { c.Bucket = "" },
		"no region":    func(c *S3Config) { c.Region = "" },
		"bad endpoint": func(c *S3Config) { c.EndpointURL = "127.0.0.1:9000" },
	} {
		c := base
		edit(&c)
		if _, err := NewS3Storage(c); !errors.Is(err, ErrInvalidS3Config) {
			t.Errorf("%s: %v, want ErrInvalidS3Config", name, err)
		}
	}
}
