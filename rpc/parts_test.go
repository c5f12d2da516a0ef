package rpc

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/petrel-broker/petrel/internal/testwait"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partsMetadata answers Metadata with a body of bytes and file sections (the body is
// not a valid Metadata response: the tests read raw frames).
type partsMetadata struct {
	*kmsg.MetadataResponse
	body     func(p *Parts)
	released *atomic.Int32
}

func (r *partsMetadata) AppendParts(p *Parts) { r.body(p) }
func (r *partsMetadata) Release()             { r.released.Add(1) }

// sectionFile is a file of random bytes, closed at cleanup.
func sectionFile(t testing.TB, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	rand.Read(data)
	path := filepath.Join(t.TempDir(), "00000000000000000000.log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// partsBody builds a body of bytes and sections of f and returns the bytes the client
// must receive after the response header: large and tiny sections, and a run of small
// ones that together overflow the copying path's buffer.
func partsBody(f *os.File, data []byte) (func(p *Parts), []byte) {
	secs := []FileSection{{f, 5, 1<<20 + 3}, {f, 100, 10}}
	for i := range 40 {
		secs = append(secs, FileSection{f, int64(i) * 7919, 10<<10 + int64(i)})
	}
	secs = append(secs, FileSection{f, 0, int64(len(data))})
	var want []byte
	for i, s := range secs {
		want = append(want, byte('a'+i))
		want = append(want, data[s.Offset:s.Offset+s.Size]...)
	}
	want = append(want, "end"...)
	return func(p *Parts) {
		for i, s := range secs {
			p.B = append(p.B, byte('a'+i))
			p.AddSection(s)
		}
		p.B = append(p.B, "end"...)
	}, want
}

func setSendfileMin(t *testing.T, n int64) {
	old := sendfileMinBytes
	sendfileMinBytes = n
	t.Cleanup(func() { sendfileMinBytes = old })
}

// TestPartsResponseFrames sends pipelined responses made of bytes and file sections on
// several connections at once, by sendfile (every section, whatever its size) and by
// the copying path, and checks every frame byte for byte and every Release.
func TestPartsResponseFrames(t *testing.T) {
	for _, mode := range []struct {
		name string
		min  int64
	}{{"sendfile", 1}, {"copy", 1 << 62}, {"mixed", sendfileMinBytes}} {
		t.Run(mode.name, func(t *testing.T) {
			setSendfileMin(t, mode.min)
			f, data := sectionFile(t, 3<<20)
			body, want := partsBody(f, data)
			var released atomic.Int32
			reg := metadataRegistry(func(_ context.Context, req *Request) Result {
				return Respond(&partsMetadata{MetadataResponse: kmsg.NewPtrMetadataResponse(), body: body, released: &released})
			})
			srv := startServer(t, ServerConfig{}, reg)
			const conns, perConn = 3, 4
			var wg sync.WaitGroup
			errs := make(chan error, conns*perConn)
			for range conns {
				c := dialRaw(t, srv.addr)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range perConn {
						writeAll(t, c, requestFrame(metadataRequest(12, "x"), int32(i)))
					}
					for i := range perConn {
						frame := readRawFrame(t, c)
						// size, correlation id, the header's empty tag buffer (v12 is flexible)
						if got := int32(frame[7]) | int32(frame[6])<<8; got != int32(i) || frame[8] != 0 || !bytes.Equal(frame[9:], want) {
							errs <- errors.New("frame differs from the expected bytes")
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			testwait.For(t, testTimeout, func() error {
				if n := released.Load(); n != conns*perConn {
					return errors.New("not every response released")
				}
				return nil
			})
		})
	}
}

// TestWritePartsNotTCP takes the copying path on a connection that is not a
// *net.TCPConn (as a TLS connection is) and checks the bytes.
func TestWritePartsNotTCP(t *testing.T) {
	setSendfileMin(t, 1)
	f, data := sectionFile(t, 2<<20)
	body, want := partsBody(f, data)
	p := &Parts{}
	body(p)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	done := make(chan error, 1)
	go func() { done <- writeParts(a, p); a.Close() }()
	b.SetReadDeadline(time.Now().Add(testTimeout))
	got, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want %d, or they differ", len(got), len(want))
	}
	flat, err := p.AppendFlat(nil)
	if err != nil || !bytes.Equal(flat, want) {
		t.Fatalf("AppendFlat: %v, equal %v", err, bytes.Equal(flat, want))
	}
}

// TestPartsShortSectionCloses: a section that ends early (its file was truncated while
// the response was sent) cannot complete the frame, so the connection closes after
// fewer bytes than the frame announced, and the response is still released.
func TestPartsShortSectionCloses(t *testing.T) {
	for _, mode := range []struct {
		name string
		min  int64
	}{{"sendfile", 1}, {"copy", 1 << 62}} {
		t.Run(mode.name, func(t *testing.T) {
			setSendfileMin(t, mode.min)
			f, _ := sectionFile(t, 1<<20)
			var released atomic.Int32
			reg := metadataRegistry(func(_ context.Context, req *Request) Result {
				return Respond(&partsMetadata{MetadataResponse: kmsg.NewPtrMetadataResponse(), released: &released,
					body: func(p *Parts) { p.B = append(p.B, 'x'); p.AddSection(FileSection{f, 1 << 19, 1 << 20}) }})
			})
			srv := startServer(t, ServerConfig{}, reg)
			c := dialRaw(t, srv.addr)
			sendRequest(t, c, metadataRequest(12, "x"), 1)
			c.SetReadDeadline(time.Now().Add(testTimeout))
			got, _ := io.ReadAll(c) // EOF or reset: either way fewer bytes than announced
			if len(got) >= 4+4+1+1+1<<20 {
				t.Fatalf("received %d bytes: the whole frame", len(got))
			}
			testwait.For(t, testTimeout, func() error {
				if released.Load() != 1 {
					return errors.New("response not released")
				}
				return nil
			})
		})
	}
}

// TestSmallSectionsLeaveInOneWrite: a frame whose sections are all copied (smaller than
// sendfileMinBytes, as a follower's one-record fetch answer is) leaves in one write,
// bytes before and after the section included, and a section larger than the copy
// buffer still arrives whole, in order.
func TestSmallSectionsLeaveInOneWrite(t *testing.T) {
	f, data := sectionFile(t, copyChunk+1000)
	var writes []int
	testHookPartsWrites = func(n int) { writes = append(writes, n) }
	t.Cleanup(func() { testHookPartsWrites = nil })
	for _, tc := range []struct {
		name       string
		secs       []FileSection
		wantWrites int
	}{
		{"one small section", []FileSection{{f, 7, 1100}}, 1},
		{"two small sections", []FileSection{{f, 7, 1100}, {f, 3000, 500}}, 1},
		{"a section over the copy buffer", []FileSection{{f, 0, copyChunk + 1000}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setSendfileMin(t, 1<<62)
			p := &Parts{}
			var want []byte
			for i, s := range tc.secs {
				p.B = append(p.B, byte('a'+i))
				want = append(want, byte('a'+i))
				p.AddSection(s)
				want = append(want, data[s.Offset:s.Offset+s.Size]...)
			}
			p.B = append(p.B, "end"...)
			want = append(want, "end"...)
			a, b := net.Pipe()
			defer b.Close()
			writes = writes[:0]
			done := make(chan error, 1)
			go func() { done <- writeParts(a, p); a.Close() }()
			b.SetReadDeadline(time.Now().Add(testTimeout))
			got, err := io.ReadAll(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d, or they differ", len(got), len(want))
			}
			if len(writes) != 1 || writes[0] != tc.wantWrites {
				t.Fatalf("writes %v, want [%d]", writes, tc.wantWrites)
			}
		})
	}
}
