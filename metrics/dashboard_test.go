package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDashboard_UsesServedMetrics checks docs/grafana-dashboard.json against what a
// registry serves: every metric its queries name exists (histograms by their _bucket
// series), and every one is documented in docs/metrics.md.
func TestDashboard_UsesServedMetrics(t *testing.T) {
	data, err := os.ReadFile("../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	snap := Snapshot{Partitions: []PartitionState{{Topic: "t", Leader: true}}, GroupLags: []GroupLag{{Group: "g", Topic: "t"}}}
	reg := New(Options{PerPartition: true, Snapshot: func() Snapshot { return snap }})
	reg.RegisterAPI(0, "Produce")
	reg.ObserveRequest(0, RequestTiming{Received: time.Now()})
	reg.Fsynced(0.001)
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, f := range fams {
		served[f.GetName()] = true
	}
	name := regexp.MustCompile(`\b(?:kafka|petrel|go)_[a-z_]+`)
	used := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			for _, m := range name.FindAllString(target.Expr, -1) {
				used++
				base := strings.TrimSuffix(m, "_bucket")
				if !served[base] {
					t.Errorf("panel %q queries %s, which is not served", p.Title, m)
				}
				if !strings.HasPrefix(base, "go_") && !strings.Contains(string(doc), "`"+base+"`") {
					t.Errorf("panel %q queries %s, which docs/metrics.md does not document", p.Title, m)
				}
			}
		}
	}
	if used < 20 {
		t.Errorf("only %d metric references in the dashboard", used)
	}
}
