package rpc

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func nopHandler(context.Context, *Request) Result { return NoResponse() }

func TestRegistryApiVersionsResponse(t *testing.T) {
	reg := NewRegistry()
	reg.Register(3, 0, 12, nopHandler)
	reg.Register(0, 0, 11, nopHandler)
	reg.Register(1, 4, 12, nopHandler)
	want := [][3]int16{{0, 0, 11}, {1, 4, 12}, {3, 0, 12}, {18, 0, 4}}
	for v := int16(0); v <= 4; v++ {
		resp := reg.ApiVersionsResponse(v)
		if resp.Version != v || resp.ErrorCode != 0 || resp.ThrottleMillis != 0 {
			t.Errorf("v%d: version %d, error %d, throttle %d", v, resp.Version, resp.ErrorCode, resp.ThrottleMillis)
		}
		if got := apiKeyRows(resp); !slices.Equal(got, want) {
			t.Errorf("v%d: ApiKeys %v, want %v", v, got, want)
		}
		if len(resp.SupportedFeatures) != 0 || len(resp.FinalizedFeatures) != 0 || resp.FinalizedFeaturesEpoch != -1 {
			t.Errorf("v%d: features must stay empty with epoch -1", v)
		}
	}
	empty := NewRegistry().ApiVersionsResponse(3)
	if len(empty.ApiKeys) != 1 || empty.ApiKeys[0].ApiKey != 18 {
		t.Errorf("empty registry advertises %+v, want only key 18", empty.ApiKeys)
	}
}

// apiKeyRows lists an ApiVersions response's table as {key, min, max} rows.
func apiKeyRows(resp *kmsg.ApiVersionsResponse) [][3]int16 {
	var rows [][3]int16
	for _, k := range resp.ApiKeys {
		rows = append(rows, [3]int16{k.ApiKey, k.MinVersion, k.MaxVersion})
	}
	return rows
}

func TestDowngradeResponse(t *testing.T) {
	got := downgradeResponse().AppendTo(nil)
	want := []byte{0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 4}
	if !slices.Equal(got, want) {
		t.Fatalf("downgrade body %x, want %x", got, want)
	}
}

func TestRegistryRegisterPanics(t *testing.T) {
	frozen := NewRegistry()
	NewServer(ServerConfig{}, frozen)
	tests := []struct {
		name     string
		reg      *Registry
		key      int16
		min, max int16
		h        Handler
		want     string
	}{
		{"duplicate", nil, 3, 0, 12, nopHandler, "twice"},
		{"api versions", nil, 18, 0, 4, nopHandler, "built in"},
		{"unknown key", nil, 1000, 0, 0, nopHandler, "unknown"},
		{"negative key", nil, -1, 0, 0, nopHandler, "unknown"},
		{"negative min", nil, 0, -1, 3, nopHandler, "range"},
		{"min above max", nil, 0, 5, 4, nopHandler, "range"},
		{"max above kmsg", nil, 3, 0, 100, nopHandler, "range"},
		{"nil handler", nil, 0, 0, 11, nil, "nil handler"},
		{"controlled shutdown v0", nil, 7, 0, 3, nopHandler, "client_id"},
		{"after NewServer", frozen, 0, 0, 11, nopHandler, "after NewServer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := tt.reg
			if reg == nil {
				reg = NewRegistry()
				reg.Register(3, 0, 12, nopHandler)
			}
			defer func() {
				r := recover()
				msg, _ := r.(string)
				if r == nil || !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %v, want one mentioning %q", r, tt.want)
				}
			}()
			reg.Register(tt.key, tt.min, tt.max, tt.h)
		})
	}
}
