package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recordingListener records the bytes of every accepted connection, both ways.
type recordingListener struct {
	net.Listener
	mu    sync.Mutex
	conns []*recordingConn
}

func (l *recordingListener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	rc := &recordingConn{Conn: nc}
	l.mu.Lock()
	l.conns = append(l.conns, rc)
	l.mu.Unlock()
	return rc, nil
}

// first returns the first accepted connection's traffic so far.
func (l *recordingListener) first() (in, out []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.conns) == 0 {
		return nil, nil
	}
	return l.conns[0].snapshot()
}

// recordingConn copies what the server reads into in and what it writes into out.
type recordingConn struct {
	net.Conn
	mu      sync.Mutex
	in, out bytes.Buffer
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.in.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *recordingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.mu.Lock()
	c.out.Write(p[:n])
	c.mu.Unlock()
	return n, err
}

func (c *recordingConn) snapshot() (in, out []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.in.Bytes()), bytes.Clone(c.out.Bytes())
}

// splitFrames cuts a byte stream into whole size-prefixed frames (sizes stripped).
func splitFrames(b []byte) [][]byte {
	var frames [][]byte
	for len(b) >= 4 {
		size := int(binary.BigEndian.Uint32(b))
		if len(b) < 4+size {
			break
		}
		frames = append(frames, b[4:4+size])
		b = b[4+size:]
	}
	return frames
}

// TestKgoNegotiation runs franz-go's kgo client against the server: kgo asks for
// ApiVersions v5, gets the downgrade reply, retries at v4, then uses the advertised
// table for Metadata.
func TestKgoNegotiation(t *testing.T) {
	infos := make(chan *ConnInfo, 16)
	reg := metadataRegistry(func(_ context.Context, req *Request) Result {
		infos <- req.Conn
		return Respond(req.Body.ResponseKind()) // an empty MetadataResponse
	})
	checkNoGoroutineLeak(t)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &recordingListener{Listener: inner}
	logs := &testwait.Buffer{}
	srv := NewServer(ServerConfig{Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})}, reg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", logs.String())
		}
	})

	client, err := kgo.NewClient(kgo.SeedBrokers(inner.Addr().String()), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	resp, err := client.Request(ctx, kmsg.NewPtrApiVersionsRequest())
	if err != nil {
		t.Fatalf("ApiVersions through kgo: %v", err)
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 || fmt.Sprint(apiKeyRows(av)) != "[[3 0 12] [18 0 4]]" {
		t.Fatalf("kgo got ApiVersions error %d, keys %v", av.ErrorCode, apiKeyRows(av))
	}
	if av.Version != 4 {
		t.Fatalf("kgo sent its own ApiVersions at v%d, want v4 (min of ours and kmsg's)", av.Version)
	}

	resp, err = client.Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		t.Fatalf("Metadata through kgo: %v", err)
	}
	if m := resp.(*kmsg.MetadataResponse); m.Version != 12 || len(m.Topics) != 0 {
		t.Fatalf("Metadata v%d with %d topics, want v12 and none", m.Version, len(m.Topics))
	}
	if info := <-infos; info.ClientSoftwareName != "kgo" || info.ClientSoftwareVersion == "" {
		t.Fatalf("handler saw client software %q %q, want kgo", info.ClientSoftwareName, info.ClientSoftwareVersion)
	}

	// The wire: v5 first, the downgrade reply, then v4 on the same connection.
	in, out := ln.first()
	reqs, resps := splitFrames(in), splitFrames(out)
	if len(reqs) < 2 || len(resps) < 2 {
		t.Fatalf("first connection carried %d requests and %d responses", len(reqs), len(resps))
	}
	key := func(f []byte) string {
		return fmt.Sprintf("%d v%d", int16(binary.BigEndian.Uint16(f)), int16(binary.BigEndian.Uint16(f[2:])))
	}
	if key(reqs[0]) != "18 v5" || key(reqs[1]) != "18 v4" {
		t.Fatalf("kgo's first requests were %s then %s, want 18 v5 then 18 v4", key(reqs[0]), key(reqs[1]))
	}
	if body := resps[0][4:]; len(body) < 2 || body[1] != 35 || !bytes.Equal(body, downgradeResponse().AppendTo(nil)) {
		t.Fatalf("reply to v5: %x, want the downgrade body", body)
	}
	if body := resps[1][4:]; !bytes.Equal(body, reg.ApiVersionsResponse(4).AppendTo(nil)) {
		t.Fatalf("reply to v4: %x", body)
	}
}
