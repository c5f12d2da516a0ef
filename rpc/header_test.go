package rpc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameBody strips the size prefix from a request frame.
func frameBody(req kmsg.Request, correlationID int32) []byte {
	return requestFrame(req, correlationID)[4:]
}

// flexibleHeaderFrame builds a Metadata v9 frame body (no size) whose header tag buffer
// holds two tags, which the server must skip.
func flexibleHeaderFrame(correlationID int32, tag string) []byte {
	var b []byte
	b = kbin.AppendInt16(b, 3) // Metadata
	b = kbin.AppendInt16(b, 9)
	b = kbin.AppendInt32(b, correlationID)
	b = kbin.AppendNullableString(b, kmsg.StringPtr("tagged-client")) // never compact
	b = kbin.AppendUvarint(b, 2)                                      // two tags
	b = kbin.AppendUvarint(b, 0)
	b = kbin.AppendUvarint(b, 3)
	b = append(b, 0xAA, 0xBB, 0xCC)
	b = kbin.AppendUvarint(b, 7)
	b = kbin.AppendUvarint(b, 1)
	b = append(b, 0x01)
	return metadataRequest(9, tag).AppendTo(b)
}

// withSize prefixes a frame body with its size.
func withSize(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestDecodeRequest(t *testing.T) {
	reg := metadataRegistry(echoMetadata)
	garbage := []byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3} // a topics array of 2^31-1 entries in 3 bytes
	nullClientID := append(kbin.AppendInt32(kbin.AppendInt16(kbin.AppendInt16(nil, 3), 4), 5), 0xff, 0xff)
	nullClientID = metadataRequest(4, "null-client").AppendTo(nullClientID)
	tests := []struct {
		name     string
		frame    []byte
		wantErr  error
		wantKey  int16
		wantVer  int16
		wantCorr int32
		wantID   *string
		wantTag  string
	}{
		{name: "metadata v4", frame: frameBody(metadataRequest(4, "a"), 11),
			wantKey: 3, wantVer: 4, wantCorr: 11, wantID: kmsg.StringPtr("raw"), wantTag: "a"},
		{name: "metadata v12 flexible", frame: frameBody(metadataRequest(12, "b"), 12),
			wantKey: 3, wantVer: 12, wantCorr: 12, wantID: kmsg.StringPtr("raw"), wantTag: "b"},
		{name: "header tags skipped", frame: flexibleHeaderFrame(13, "c"),
			wantKey: 3, wantVer: 9, wantCorr: 13, wantID: kmsg.StringPtr("tagged-client"), wantTag: "c"},
		{name: "null client id", frame: nullClientID,
			wantKey: 3, wantVer: 4, wantCorr: 5, wantTag: "null-client"},
		{name: "api versions v3", frame: frameBody(&kmsg.ApiVersionsRequest{Version: 3, ClientSoftwareName: "x", ClientSoftwareVersion: "1"}, 14),
			wantKey: 18, wantVer: 3, wantCorr: 14, wantID: kmsg.StringPtr("raw")},
		{name: "api versions v5 not decoded", frame: append(kbin.AppendInt16(kbin.AppendInt16(kbin.AppendInt32(kbin.AppendInt16(kbin.AppendInt16(nil, 18), 5), 15), -1), 0), 0xff, 0xff),
			wantKey: 18, wantVer: 5, wantCorr: 15},
		{name: "api versions v32767 not decoded", frame: append(kbin.AppendInt16(kbin.AppendInt32(kbin.AppendInt16(kbin.AppendInt16(nil, 18), 32767), 16), -1), 1, 2, 3),
			wantKey: 18, wantVer: 32767, wantCorr: 16},
		{name: "short header", frame: []byte{0, 3, 0, 4, 0, 0, 0, 1, 0}, wantErr: ErrMalformedHeader},
		{name: "client id past end", frame: []byte{0, 3, 0, 4, 0, 0, 0, 1, 0, 9, 'a'}, wantErr: ErrMalformedHeader},
		{name: "header tags past end", frame: append(frameBody(metadataRequest(9, "d"), 1)[:13], 5, 1, 9), wantErr: ErrMalformedHeader},
		{name: "unknown key", frame: frameBody(metadataRequest(4, "x"), 1), wantErr: ErrUnknownKey},
		{name: "unserved key", frame: frameBody(kmsg.NewPtrCreateTopicsRequest(), 1), wantErr: ErrUnknownKey},
		{name: "version above range", frame: frameBody(metadataRequest(13, "x"), 1), wantErr: ErrUnsupportedVersion},
		{name: "negative version", frame: []byte{0, 3, 0xff, 0xff, 0, 0, 0, 1, 0xff, 0xff}, wantErr: ErrUnsupportedVersion},
		{name: "api versions negative version", frame: []byte{0, 18, 0xff, 0xff, 0, 0, 0, 1, 0xff, 0xff}, wantErr: ErrUnsupportedVersion},
		{name: "garbage body", frame: append([]byte{0, 3, 0, 4, 0, 0, 0, 1, 0xff, 0xff}, garbage...), wantErr: ErrMalformedRequest},
		{name: "empty body", frame: []byte{0, 3, 0, 4, 0, 0, 0, 1, 0xff, 0xff}, wantErr: ErrMalformedRequest},
	}
	// Key 1000 is unknown to kmsg.
	binary.BigEndian.PutUint16(tests[10].frame, 1000)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := decodeRequest(tt.frame, reg)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.Key != tt.wantKey || req.Version != tt.wantVer || req.CorrelationID != tt.wantCorr {
				t.Fatalf("header %d/%d/%d, want %d/%d/%d", req.Key, req.Version, req.CorrelationID, tt.wantKey, tt.wantVer, tt.wantCorr)
			}
			if (req.ClientID == nil) != (tt.wantID == nil) || req.ClientID != nil && *req.ClientID != *tt.wantID {
				t.Fatalf("client id %v, want %v", req.ClientID, tt.wantID)
			}
			if req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version {
				t.Fatalf("body is %d v%d", req.Body.Key(), req.Body.GetVersion())
			}
			if tt.wantTag != "" {
				if got := requestTag(req); got != tt.wantTag {
					t.Fatalf("topic %q, want %q", got, tt.wantTag)
				}
			}
		})
	}
}

// TestDecodeRequestOwnsNoHeaderStrings checks that the client id is copied, so reusing
// the frame cannot change it.
func TestDecodeRequestOwnsNoHeaderStrings(t *testing.T) {
	frame := frameBody(metadataRequest(4, "a"), 1)
	req, err := decodeRequest(frame, metadataRegistry(echoMetadata))
	if err != nil {
		t.Fatal(err)
	}
	for i := range frame {
		frame[i] = 'z'
	}
	if *req.ClientID != "raw" || requestTag(req) != "a" {
		t.Fatalf("decoded strings alias the frame: client id %q, topic %q", *req.ClientID, requestTag(req))
	}
}

func TestAppendResponse(t *testing.T) {
	corr := []byte{0, 0, 0x30, 0x39} // 12345
	tests := []struct {
		name   string
		resp   kmsg.Response
		tagged bool
	}{
		{"metadata v8 header v0", &kmsg.MetadataResponse{Version: 8}, false},
		{"metadata v9 header v1", &kmsg.MetadataResponse{Version: 9}, true},
		{"api versions v0", &kmsg.ApiVersionsResponse{Version: 0}, false},
		{"api versions v3 flexible body, header v0", &kmsg.ApiVersionsResponse{Version: 3}, false},
		{"produce v9 header v1", &kmsg.ProduceResponse{Version: 9}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.resp.AppendTo(nil)
			want := append([]byte(nil), corr...)
			if tt.tagged {
				want = append(want, 0)
			}
			want = withSize(append(want, body...))
			got := appendResponse([]byte("prefix"), 12345, tt.resp)
			if !bytes.Equal(got[:6], []byte("prefix")) || !bytes.Equal(got[6:], want) {
				t.Fatalf("frame %x, want prefix + %x", got, want)
			}
		})
	}
}
