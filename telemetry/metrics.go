// Package telemetry is airlock's operability: Prometheus metrics and
// OpenTelemetry traces, as observers of what the other packages report
// (each tool call's typed outcome, the commit engine's journal writes and
// decisions, each scan's run, each upstream request's attempts). Labels
// and attributes take their values from fixed sets or the configuration,
// never from a call's arguments or an upstream's answer. Only cmd imports
// it: a program that embeds the tools links neither library.
package telemetry

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Metrics are airlock's Prometheus metrics. Every label takes its values
// from a fixed set (tool names, statuses, outcomeLabels, decisions) or from the
// configuration (upstream and resource names): never an id, never a value
// from a tool's arguments or an upstream's answer.
type Metrics struct {
	reg *prometheus.Registry

	toolCalls        *prometheus.CounterVec
	toolSeconds      *prometheus.HistogramVec
	answers          *prometheus.CounterVec
	upstreamRequests *prometheus.CounterVec
	upstreamSeconds  *prometheus.HistogramVec
	scanPages        *prometheus.CounterVec
	scanItems        *prometheus.CounterVec
	targetOutcomes   *prometheus.CounterVec
	journalSeconds   prometheus.Histogram
	journalErrors    prometheus.Counter
	takeovers        prometheus.Counter
	approvalWaits    *prometheus.HistogramVec

	tools     map[string]bool
	upstreams map[string]bool
	resources map[string]bool
}

// NewMetrics registers airlock's metrics, and the Go runtime's and the
// process's, on a registry of their own. The upstream and resource labels
// take the names cfg declares (nil: none, every value is "other").
func NewMetrics(cfg *config.Config) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) prometheus.Collector { reg.MustRegister(c); return c }
	secs := []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	m := &Metrics{
		reg: reg,
		toolCalls: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_tool_calls_total",
			Help: "Tool calls by tool and status (complete, partial, error, input_required, task)."}, []string{"tool", "status"})).(*prometheus.CounterVec),
		toolSeconds: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "airlock_tool_call_duration_seconds",
			Help: "Time to answer a tool call, by tool.", Buckets: secs}, []string{"tool"})).(*prometheus.HistogramVec),
		answers: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_answers_total",
			Help: "Tool answers by tool and whether they covered the whole requested scope (complete): complete=\"true\" over all is the complete ratio."},
			[]string{"tool", "complete"})).(*prometheus.CounterVec),
		upstreamRequests: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_upstream_requests_total",
			Help: "Upstream HTTP requests (each attempt) by upstream, status and whether the attempt was a retry."},
			[]string{"upstream", "status", "retry"})).(*prometheus.CounterVec),
		upstreamSeconds: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "airlock_upstream_request_duration_seconds",
			Help: "Time of an upstream HTTP attempt until its headers, by upstream.", Buckets: secs}, []string{"upstream"})).(*prometheus.HistogramVec),
		scanPages: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_scan_pages_total",
			Help: "List pages read by scans, by resource."}, []string{"resource"})).(*prometheus.CounterVec),
		scanItems: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_scan_items_total",
			Help: "Items scanned, by resource."}, []string{"resource"})).(*prometheus.CounterVec),
		targetOutcomes: f(prometheus.NewCounterVec(prometheus.CounterOpts{Name: "airlock_target_outcomes_total",
			Help: "Journaled target transitions, by the outcome written (in_flight is an intent)."}, []string{"outcome"})).(*prometheus.CounterVec),
		journalSeconds: f(prometheus.NewHistogram(prometheus.HistogramOpts{Name: "airlock_journal_write_duration_seconds",
			Help:    "Time of one journal write (a group commit of target entries) in the store.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}})).(prometheus.Histogram),
		journalErrors: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "airlock_journal_write_errors_total",
			Help: "Journal writes the store refused or failed (a lost lease included)."})).(prometheus.Counter),
		takeovers: f(prometheus.NewCounter(prometheus.CounterOpts{Name: "airlock_lease_takeovers_total",
			Help: "Operations this process took over after their lease expired."})).(prometheus.Counter),
		approvalWaits: f(prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "airlock_approval_wait_seconds",
			Help:    "Time from a selection's preview to a person's decision about it, by channel and decision.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600}}, []string{"channel", "decision"})).(*prometheus.HistogramVec),
		tools:     map[string]bool{},
		upstreams: map[string]bool{},
		resources: map[string]bool{},
	}
	for _, name := range tools.ToolNames() {
		m.tools[name] = true
	}
	if cfg != nil {
		for name := range cfg.Upstreams {
			m.upstreams[name] = true
		}
		for name := range cfg.Resources {
			m.resources[name] = true
		}
	}
	m.zero()
	return m
}

// zero makes every series whose labels are known at start-up exist at
// zero: a dashboard or an alert on a fresh replica sees 0, not no data
// (which rate() and absent() read otherwise). The labels are the fixed
// sets and the configuration's names; "other" appears when it happens.
func (m *Metrics) zero() {
	for tool := range m.tools {
		for status := range callStatuses {
			m.toolCalls.WithLabelValues(tool, status)
		}
		m.toolSeconds.WithLabelValues(tool)
		m.answers.WithLabelValues(tool, "true")
		m.answers.WithLabelValues(tool, "false")
	}
	for up := range m.upstreams {
		for _, status := range statusLabels {
			m.upstreamRequests.WithLabelValues(up, status, "false")
			m.upstreamRequests.WithLabelValues(up, status, "true")
		}
		m.upstreamSeconds.WithLabelValues(up)
	}
	for r := range m.resources {
		m.scanPages.WithLabelValues(r)
		m.scanItems.WithLabelValues(r)
	}
	for o := range outcomeLabels {
		m.targetOutcomes.WithLabelValues(o)
	}
	for c := range channels {
		for d := range decisions {
			m.approvalWaits.WithLabelValues(c, d)
		}
	}
}

// callStatuses are the values a tool call's status label takes.
var callStatuses = map[string]bool{string(envelope.StatusComplete): true, string(envelope.StatusPartial): true,
	string(envelope.StatusError): true, tools.StatusInputRequired: true, tools.StatusTask: true}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is where the metrics are registered.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveScan is the upstream.Options.ObserveScan that counts the pages
// and items of each scan run, by resource.
func (m *Metrics) ObserveScan(resource string, pages, items int) {
	r := bounded(m.resources, resource)
	m.scanPages.WithLabelValues(r).Add(float64(pages))
	m.scanItems.WithLabelValues(r).Add(float64(items))
}

// bounded returns v when it is one of the known values, else "other".
func bounded(known map[string]bool, v string) string {
	if known[v] {
		return v
	}
	return "other"
}

// StartCall counts and times a tool call (it observes the MCP server's
// calls: see mcpserver.Observer).
func (m *Metrics) StartCall(ctx context.Context, tool string) (context.Context, func(tools.Outcome)) {
	return ctx, func(o tools.Outcome) {
		name := bounded(m.tools, tool)
		m.toolCalls.WithLabelValues(name, bounded(callStatuses, o.Status)).Inc()
		m.toolSeconds.WithLabelValues(name).Observe(o.Duration.Seconds())
		if o.Complete != nil {
			m.answers.WithLabelValues(name, strconv.FormatBool(*o.Complete)).Inc()
		}
	}
}

// statusCodes are the statuses an upstream commonly answers: each is a
// label value of its own, the others are counted by class.
var statusCodes = []int{200, 201, 202, 204, 301, 302, 303, 304, 307, 308, 400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 422, 429, 500, 501, 502, 503, 504}

// statusLabels are every value statusLabel returns.
var statusLabels = func() []string {
	out := []string{"error", "other", "1xx", "2xx", "3xx", "4xx", "5xx"}
	for _, c := range statusCodes {
		out = append(out, strconv.Itoa(c))
	}
	return out
}()

// statusLabel is an HTTP status as a label: the code for the statuses an
// upstream commonly answers, its class for the others.
func statusLabel(code int) string {
	if slices.Contains(statusCodes, code) {
		return strconv.Itoa(code)
	}
	if code >= 100 && code < 600 {
		return strconv.Itoa(code/100) + "xx"
	}
	return "other"
}

// Transport counts and times each attempt of the requests to an upstream.
func (m *Metrics) Transport(name string, next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		start := time.Now()
		resp, err := next.RoundTrip(req)
		status := "error"
		if err == nil {
			status = statusLabel(resp.StatusCode)
		}
		retry := strconv.FormatBool(transport.Attempt(req.Context()) > 1)
		up := bounded(m.upstreams, name)
		m.upstreamRequests.WithLabelValues(up, status, retry).Inc()
		m.upstreamSeconds.WithLabelValues(up).Observe(time.Since(start).Seconds())
		return resp, err
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// outcomeLabels are the values the outcome label takes.
var outcomeLabels = func() map[string]bool {
	m := map[string]bool{}
	for _, o := range []selection.Outcome{selection.TargetPending, selection.TargetInFlight, selection.TargetSucceeded, selection.TargetFailed,
		selection.TargetSkipped, selection.TargetUnknown, selection.TargetWouldSucceed, selection.TargetWouldSkip} {
		m[string(o)] = true
	}
	return m
}()

var channels = map[string]bool{selection.ChannelClient: true, selection.ChannelOperator: true, selection.ChannelReviewPage: true}

var decisions = map[string]bool{selection.DecisionApproved: true, selection.DecisionRejected: true,
	selection.DecisionDeclined: true, selection.DecisionCancelled: true}

// Journaled implements selection.Observer.
func (m *Metrics) Journaled(entries []selection.Target, took time.Duration, err error) {
	m.journalSeconds.Observe(took.Seconds())
	if err != nil {
		m.journalErrors.Inc()
		return
	}
	for _, e := range entries {
		m.targetOutcomes.WithLabelValues(bounded(outcomeLabels, string(e.Outcome))).Inc()
	}
}

// TookOver implements selection.Observer.
func (m *Metrics) TookOver() { m.takeovers.Inc() }

// Decided implements selection.Observer.
func (m *Metrics) Decided(channel, decision string, waited time.Duration) {
	m.approvalWaits.WithLabelValues(bounded(channels, channel), bounded(decisions, decision)).Observe(waited.Seconds())
}
