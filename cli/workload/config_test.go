package workload

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseFaultPoints(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []FaultPoint
		err  string
	}{
		{in: "30%,60%", want: []FaultPoint{{Fraction: 0.3}, {Fraction: 0.6}}},
		{in: "10s, 1m", want: []FaultPoint{{After: 10 * time.Second}, {After: time.Minute}}},
		{in: "100%,5s", want: []FaultPoint{{Fraction: 1}, {After: 5 * time.Second}}},
		{in: "0%", err: `bad fault moment "0%"`},
		{in: "101%", err: `bad fault moment "101%"`},
		{in: "-1s", err: `bad fault moment "-1s"`},
		{in: "soon", err: `bad fault moment "soon"`},
		{in: " , ", err: "no fault moment given"},
	} {
		got, err := ParseFaultPoints(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%q: %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := func() Config {
		return Config{Topic: "t", Partitions: 1, ReplicationFactor: 1, Producers: 1, Keys: 1, Records: 10}
	}
	c := ok()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Run == "" || c.Group != "petrel-verify-"+c.Run || c.DeliveryTimeout == 0 || c.DrainTimeout == 0 || c.Logger == nil {
		t.Errorf("defaults not filled in: %+v", c)
	}
	for _, tt := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Topic = "" }, "no topic"},
		{func(c *Config) { c.Producers = 0 }, "producers 0"},
		{func(c *Config) { c.Keys = 0 }, "keys 0"},
		{func(c *Config) { c.Records, c.Duration = 0, 0 }, "give a number of records"},
		{func(c *Config) { c.Records = MaxRecords + 1 }, "records"},
		{func(c *Config) { c.AbortFraction = 1.5 }, "abort fraction"},
		{func(c *Config) { c.Transactions, c.TransactionRecords = true, 0 }, "records per transaction"},
		{func(c *Config) { c.Faults = []FaultPoint{{Fraction: 0.5}} }, "without a fault"},
		{func(c *Config) {
			c.Duration, c.Faults = time.Second, []FaultPoint{{After: time.Minute}}
			c.Fault = func(context.Context, int) (string, error) { return "", nil }
		}, "after the run's end"},
	} {
		c := ok()
		tt.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
	}
}
