// Package s3test runs a real S3-compatible server for tests: versitygw
// (github.com/versity/versitygw, Apache-2.0) over a temporary directory, on a free
// loopback port, with root credentials and one bucket. Tests only: no production code
// may import it (deps_test.go).
//
// The binary is $PETREL_VERSITYGW, else versitygw on $PATH, else in $GOBIN,
// $GOPATH/bin or ~/go/bin, where
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// puts it; when there is none, Start builds that release into the user's cache
// directory once (build.go), so `go test ./...` needs nothing installed first. A test
// that calls Start is skipped only when no binary is found and none can be built,
// unless PETREL_REQUIRE_S3=1 (which .ci/run sets), where it fails: CI never skips
// silently.
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// InstallCommand is how to install the server the tests use.
const InstallCommand = "go install github.com/versity/versitygw/cmd/versitygw@" + Version

// RequireEnv, set to 1, turns a missing server binary from a skip into a failure.
const RequireEnv = "PETREL_REQUIRE_S3"

// startTimeout bounds a server's start, on a loaded 2-core CI machine too.
const startTimeout = 60 * time.Second

// Server is one running versitygw with one bucket.
type Server struct {
	Endpoint  string // http://127.0.0.1:<port>
	Bucket    string
	Region    string
	AccessKey string // the root account's
	SecretKey string

	bin     string
	dataDir string // the posix backend's root: a directory per bucket
	metaDir string // its metadata (sidecar files, so the file system needs no xattrs)
	addr    string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	output *bytes.Buffer
}

// Start runs a server for the test with a bucket named "petrel-test", and stops it when
// the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := BinaryOrSkip(t)
	root := t.TempDir()
	s := &Server{
		Bucket: "petrel-test", Region: "us-east-1",
		AccessKey: "petrel-root", SecretKey: "petrel-root-secret-key",
		bin: bin, dataDir: filepath.Join(root, "data"), metaDir: filepath.Join(root, "meta"),
	}
	for _, d := range []string{s.dataDir, s.metaDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(s.Stop)
	var err error
	for attempt := 0; attempt < 3; attempt++ { // a free port may be taken before the server binds it
		s.addr, err = freeAddr()
		if err != nil {
			t.Fatal(err)
		}
		s.Endpoint = "http://" + s.addr
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("starting versitygw: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("creating bucket %s: %v", s.Bucket, err)
	}
	return s
}

// BinaryOrSkip returns the path of the versitygw binary, building it when there is
// none; without one it skips the test (fails it with PETREL_REQUIRE_S3=1).
func BinaryOrSkip(t testing.TB) string {
	t.Helper()
	bin := Binary()
	if bin == "" {
		var err error
		if bin, err = build(); err != nil {
			t.Logf("building versitygw: %v", err)
		}
	}
	if bin == "" {
		msg := "versitygw (the S3-compatible server of these tests) not found and could not be built; install it with: " + InstallCommand
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("%s (%s=1 requires it)", msg, RequireEnv)
		}
		t.Skipf("%s, or set %s=1 to fail instead of skipping", msg, RequireEnv)
	}
	return bin
}

// Binary returns the path of the versitygw binary, "" when there is none.
func Binary() string {
	if p := os.Getenv("PETREL_VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("GOPATH"); d != "" {
		dirs = append(dirs, filepath.Join(strings.Split(d, string(os.PathListSeparator))[0], "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if info, err := os.Stat(p); err == nil && !info.IsDir() {
			return p
		}
	}
	return ""
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// start runs the server on s.addr and waits until it answers HTTP.
func (s *Server) start() error {
	s.mu.Lock()
	cmd := exec.Command(s.bin, "--port", s.addr, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "posix", "--sidecar", s.metaDir, s.dataDir)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited, s.output = cmd, exited, out
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			return fmt.Errorf("versitygw exited: %s", s.Output())
		default:
		}
		if resp, err := client.Get(s.Endpoint + "/"); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("versitygw did not answer on %s within %v: %s", s.addr, startTimeout, s.Output())
		}
		time.Sleep(20 * time.Millisecond) // polling for the server to answer, bounded by deadline
	}
}

// Output is what the server printed.
func (s *Server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.output == nil {
		return ""
	}
	return s.output.String()
}

// Stop kills the server and waits for it to exit; the data stays for Restart. Stopping
// a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart starts a stopped server again on the same address with the same data.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatalf("restarting versitygw: %v", err)
	}
}

// Client returns an S3 client of the root account, for setting up and inspecting the
// store from a test.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.Endpoint),
		UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}, nil
		}),
	})
}

// Keys lists the keys of the bucket under prefix, in order.
func (s *Server) Keys(t testing.TB, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatalf("listing %s/%s: %v", s.Bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

// SlowProxy returns the address of a proxy to endpoint that holds every request for
// delay before passing it on (a store answering slowly), closed when the test ends.
func SlowProxy(t testing.TB, endpoint string, delay time.Duration) string {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// A request whose body was not read does not see its client go away, so the test's
	// end releases the held requests too.
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
			proxy.ServeHTTP(w, r)
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	return srv.URL
}
