package rpc

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testKindKey is a request kind of these tests, outside Kafka's keys.
const testKindKey = 30001

func init() {
	RegisterRequestKind(testKindKey, "TestKind", func() kmsg.Request { return &testKindRequest{} })
}

// testKindRequest carries one int32; its response is itself.
type testKindRequest struct {
	Version int16
	Value   int32
}

func (*testKindRequest) Key() int16                    { return testKindKey }
func (*testKindRequest) MaxVersion() int16             { return 0 }
func (r *testKindRequest) SetVersion(v int16)          { r.Version = v }
func (r *testKindRequest) GetVersion() int16           { return r.Version }
func (*testKindRequest) IsFlexible() bool              { return false }
func (r *testKindRequest) AppendTo(b []byte) []byte    { return kbin.AppendInt32(b, r.Value) }
func (r *testKindRequest) ResponseKind() kmsg.Response { return &testKindResponse{} }
func (r *testKindRequest) ReadFrom(b []byte) error {
	rd := kbin.Reader{Src: b}
	r.Value = rd.Int32()
	return rd.Complete()
}

type testKindResponse struct{ testKindRequest }

func (*testKindResponse) RequestKind() kmsg.Request { return &testKindRequest{} }

// TestRegisterRequestKind: a request kind kmsg does not know is registered, served and
// decoded like Kafka's, and named in logs; Kafka's own keys cannot be taken.
func TestRegisterRequestKind(t *testing.T) {
	reg := NewRegistry()
	reg.RegisterInternal(testKindKey, 0, 0, func(context.Context, *Request) Result { return Respond(&testKindResponse{}) })
	req, err := decodeRequest(frameBody(&testKindRequest{Value: 42}, 7), reg)
	if err != nil {
		t.Fatal(err)
	}
	if body, ok := req.Body.(*testKindRequest); !ok || body.Value != 42 || req.CorrelationID != 7 {
		t.Fatalf("decoded %+v", req)
	}
	if NameForKey(testKindKey) != "TestKind" || NameForKey(3) != "Metadata" {
		t.Fatalf("names %q, %q", NameForKey(testKindKey), NameForKey(3))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering Kafka's Metadata key did not panic")
		}
	}()
	RegisterRequestKind(3, "Mine", func() kmsg.Request { return &testKindRequest{} })
}
