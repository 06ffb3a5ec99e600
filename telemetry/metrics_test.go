package telemetry

import (
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/fixtures"
	"github.com/airlock-mcp/airlock/tools"
)

func demoConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse(fixtures.DemoConfig("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// registered are the names of the metric families registered on reg,
// whether or not they have a series yet.
func registered(reg *prometheus.Registry) []string {
	ch := make(chan *prometheus.Desc)
	go func() { reg.Describe(ch); close(ch) }()
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var out []string
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// TestNewMetrics_EveryFamilyExistsAtZeroFromStart: before any event, every
// airlock family is exposed, with a zero series for each label value known
// at start-up (the catalog's tools, the fixed sets, the configuration's
// upstreams and resources), so that rate() and alerts on a fresh replica
// read 0 rather than no data.
func TestNewMetrics_EveryFamilyExistsAtZeroFromStart(t *testing.T) {
	cfg := demoConfig(t)
	m := NewMetrics(cfg)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		gathered[f.GetName()] = f
	}
	var airlock []string
	for _, name := range registered(m.Registry()) {
		if regexp.MustCompile(`^airlock_`).MatchString(name) {
			airlock = append(airlock, name)
		}
	}
	if len(airlock) < 12 {
		t.Fatalf("only %d airlock families are registered: %v", len(airlock), airlock)
	}
	for _, name := range airlock {
		f := gathered[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Errorf("%s is registered but not exposed at start", name)
			continue
		}
		for _, s := range f.GetMetric() {
			if v := value(s); v != 0 {
				t.Errorf("%s%v starts at %v", name, labels(s), v)
			}
		}
	}

	want := map[string][]map[string]string{}
	add := func(family string, l map[string]string) { want[family] = append(want[family], l) }
	for _, tool := range tools.ToolNames() {
		for _, status := range []string{"complete", "partial", "error", tools.StatusInputRequired, tools.StatusTask} {
			add("airlock_tool_calls_total", map[string]string{"tool": tool, "status": status})
		}
		add("airlock_tool_call_duration_seconds", map[string]string{"tool": tool})
		add("airlock_answers_total", map[string]string{"tool": tool, "complete": "true"})
		add("airlock_answers_total", map[string]string{"tool": tool, "complete": "false"})
	}
	for name := range cfg.Upstreams {
		add("airlock_upstream_requests_total", map[string]string{"upstream": name, "status": "429", "retry": "true"})
		add("airlock_upstream_requests_total", map[string]string{"upstream": name, "status": "5xx", "retry": "false"})
		add("airlock_upstream_requests_total", map[string]string{"upstream": name, "status": "error", "retry": "false"})
		add("airlock_upstream_request_duration_seconds", map[string]string{"upstream": name})
	}
	if len(cfg.Resources) == 0 {
		t.Fatal("the demo configuration declares no resource")
	}
	for name := range cfg.Resources {
		add("airlock_scan_pages_total", map[string]string{"resource": name})
		add("airlock_scan_items_total", map[string]string{"resource": name})
	}
	for _, o := range []string{"pending", "in_flight", "succeeded", "failed", "skipped", "unknown"} {
		add("airlock_target_outcomes_total", map[string]string{"outcome": o})
	}
	add("airlock_approval_wait_seconds", map[string]string{"channel": "operator_cli", "decision": "approved"})
	add("airlock_journal_write_errors_total", map[string]string{})
	for family, series := range want {
		for _, l := range series {
			if !slices.ContainsFunc(gathered[family].GetMetric(), func(s *dto.Metric) bool { return equalLabels(labels(s), l) }) {
				t.Errorf("%s%v is not exposed at start", family, l)
			}
		}
	}
	for _, f := range fams {
		for _, s := range f.GetMetric() {
			if l := labels(s); l["tool"] == "other" || l["resource"] == "other" || l["upstream"] == "other" {
				t.Errorf("%s%v: other exists before anything unknown happened", f.GetName(), l)
			}
		}
	}
}

// TestStatusLabel_TakesOnlyTheValuesStartedAtZero: every status an
// upstream attempt can be counted under is one of the series created at
// start, so no count ever starts a series that was missing.
func TestStatusLabel_TakesOnlyTheValuesStartedAtZero(t *testing.T) {
	for code := -1; code < 1000; code++ {
		if l := statusLabel(code); !slices.Contains(statusLabels, l) {
			t.Errorf("status %d is counted as %q, which does not start at zero", code, l)
		}
	}
	if !slices.Contains(statusLabels, "error") {
		t.Error("a failed attempt (error) does not start at zero")
	}
}

// TestStartCall_BoundsAStatusOutsideTheSet: a tool call's status label
// keeps to its fixed set whatever the outcome says.
func TestStartCall_BoundsAStatusOutsideTheSet(t *testing.T) {
	m := NewMetrics(demoConfig(t))
	_, end := m.StartCall(t.Context(), "search_all")
	end(tools.Outcome{Tool: "search_all", Status: "made-up"})
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "airlock_tool_calls_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			if l := labels(s); l["status"] == "made-up" || l["status"] == "other" && value(s) != 1 {
				t.Errorf("%v = %v", l, value(s))
			}
		}
	}
}

func labels(s *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range s.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// value is a series' value: a counter's count, a histogram's number of
// observations.
func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	}
	panic("unexpected metric type " + strconv.Quote(s.String()))
}
