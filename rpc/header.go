package rpc

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// minRequestHeaderSize is the smallest request header: api_key (2), api_version (2),
// correlation_id (4) and the client_id length (2). ControlledShutdown v0, the one
// request without client_id, is not served.
const minRequestHeaderSize = 10

// decodeRequest turns one frame (a request without its 4-byte size) into a Request.
//
// The header is request header v1 or v2: api_key, api_version, correlation_id, then
// client_id as an int16-length nullable string (never compact), then for flexible
// requests a tag buffer, which is skipped. An ApiVersions request above version 4 is
// returned undecoded (Body holds only the version) so the caller can send the KIP-511
// downgrade reply. A key unknown to kmsg or not in reg, a version outside the
// registered range, or a body that fails to decode is an error: Kafka closes the
// connection for each. Trailing bytes after the body are ignored, as kmsg does.
//
// Body's []byte fields alias frame, and strings are copied; frame must not be reused
// while they are in use (framepool.go).
func decodeRequest(frame []byte, reg *Registry) (*Request, error) {
	return decodeRequestAfter(frame, reg, nil)
}

// decodeRequestAfter is decodeRequest for a connection whose previous request had the
// client id prevClientID: when this one's is the same, ClientID is that same pointer
// rather than a new copy (clients send one client id for the life of a connection).
func decodeRequestAfter(frame []byte, reg *Registry, prevClientID *string) (*Request, error) {
	if len(frame) < minRequestHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes", ErrMalformedHeader, len(frame))
	}
	rd := kbin.Reader{Src: frame}
	req := &Request{
		Key:           rd.Int16(),
		Version:       rd.Int16(),
		CorrelationID: rd.Int32(),
		ClientID:      readClientID(&rd, prevClientID),
	}
	if !rd.Ok() {
		return nil, fmt.Errorf("%w: client_id runs past the frame", ErrMalformedHeader)
	}
	if req.Key == apiVersionsKey && req.Version > apiVersionsMaxVersion {
		body := kmsg.NewPtrApiVersionsRequest()
		body.Version = req.Version
		req.Body = body
		return req, nil
	}
	body := RequestForKey(req.Key)
	if body == nil {
		return nil, fmt.Errorf("%w: key %d", ErrUnknownKey, req.Key)
	}
	minV, maxV, ok := reg.versions(req.Key)
	if !ok {
		return nil, fmt.Errorf("%w: %s (key %d) is not served", ErrUnknownKey, kmsg.NameForKey(req.Key), req.Key)
	}
	if req.Version < minV || req.Version > maxV {
		return nil, fmt.Errorf("%w: %s v%d (served %d-%d)", ErrUnsupportedVersion, kmsg.NameForKey(req.Key), req.Version, minV, maxV)
	}
	body.SetVersion(req.Version)
	if body.IsFlexible() {
		kmsg.SkipTags(&rd)
		if !rd.Ok() {
			return nil, fmt.Errorf("%w: tag buffer runs past the frame", ErrMalformedHeader)
		}
	}
	if err := body.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("%w: %s v%d: %w", ErrMalformedRequest, kmsg.NameForKey(req.Key), req.Version, err)
	}
	req.Body = body
	return req, nil
}

// readClientID reads the header's client_id, an int16-length nullable string, reusing
// prev when it holds the same string.
func readClientID(rd *kbin.Reader, prev *string) *string {
	l := rd.Int16()
	if l < 0 {
		return nil
	}
	b := rd.Span(int(l))
	if !rd.Ok() {
		return nil
	}
	if prev != nil && string(b) == *prev {
		return prev
	}
	s := string(b)
	return &s
}

// appendResponse appends a whole response frame to dst: the int32 size, the
// correlation id, for flexible responses other than ApiVersions the empty tag buffer of
// response header v1 (one 0x00 byte), then the body. ApiVersions always uses response
// header v0, even for its flexible v3+ bodies.
func appendResponse(dst []byte, correlationID int32, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, filled in below
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if resp.IsFlexible() && resp.Key() != apiVersionsKey {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// maxPooledBuffer is the largest response buffer kept for reuse; bigger ones (large
// fetches) are left to the garbage collector.
const maxPooledBuffer = 1 << 20

// bufferPool holds response encoding buffers.
var bufferPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// getBuffer takes a buffer from the pool.
func getBuffer() *[]byte { return bufferPool.Get().(*[]byte) }

// putBuffer returns b to the pool unless it grew too large.
func putBuffer(b *[]byte) {
	if cap(*b) <= maxPooledBuffer {
		bufferPool.Put(b)
	}
}
