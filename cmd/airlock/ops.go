package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/mcpserver"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/telemetry"
	"github.com/airlock-mcp/airlock/upstream"
)

// operability is what serve offers operators: Prometheus metrics, optional
// OpenTelemetry traces, and the health probes.
type operability struct {
	metrics  *telemetry.Metrics
	tracing  *telemetry.Tracing
	shutdown func(context.Context) error
}

// tracingEnabled reports whether the standard OpenTelemetry environment
// names an OTLP endpoint for traces.
func tracingEnabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newOperability builds the metrics when they are served (withMetrics:
// --metrics; their labels take cfg's upstream and resource names) and,
// when the environment names an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, with
// the exporter's other standard variables), traces sent there over
// OTLP/HTTP. Metrics no listener serves are not kept: a server without
// --metrics (every one over stdio) neither registers their collectors and
// series at start-up nor counts into them on each call.
func newOperability(ctx context.Context, logger *slog.Logger, cfg *config.Config, withMetrics bool) (*operability, error) {
	o := &operability{shutdown: func(context.Context) error { return nil }}
	if withMetrics {
		o.metrics = telemetry.NewMetrics(cfg)
	}
	if !tracingEnabled() {
		return o, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res := resource.Default()
	if os.Getenv("OTEL_SERVICE_NAME") == "" {
		if merged, err := resource.Merge(res, resource.NewSchemaless(attribute.String("service.name", "airlock"),
			attribute.String("service.version", version))); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	o.tracing = telemetry.NewTracing(tp)
	o.shutdown = tp.Shutdown
	logger.Info("sending traces over OTLP")
	return o, nil
}

// upstreamOptions makes the upstream clients and scans feed the metrics
// and traces.
func (o *operability) upstreamOptions(opts *upstream.Options) {
	opts.WrapTransport = telemetry.WrapTransport(o.metrics, o.tracing)
	if o.metrics != nil {
		opts.ObserveScan = o.metrics.ObserveScan
	}
}

// engineObserver is what the commit engine tells the metrics (nil without
// them).
func (o *operability) engineObserver() selection.Observer {
	if o.metrics == nil {
		return nil
	}
	return o.metrics
}

// observers are what the MCP server tells of each tool call.
func (o *operability) observers() []mcpserver.Observer {
	var out []mcpserver.Observer
	if o.metrics != nil {
		out = append(out, o.metrics)
	}
	if o.tracing != nil {
		out = append(out, o.tracing)
	}
	return out
}

// close flushes the traces.
func (o *operability) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = o.shutdown(ctx)
}

// envMetricsToken names the bearer token the metrics listener requires
// (always when set; off loopback, it or OAuth must be).
const envMetricsToken = "AIRLOCK_METRICS_TOKEN"

// serveMetrics serves /metrics and the probes on addr until ctx is done,
// behind the checks of opts (Host, Origin, token: see
// httpserve.MetricsHandler).
func (o *operability) serveMetrics(ctx context.Context, addr string, opts httpserve.Options) (func(), error) {
	logger := opts.Logger
	bind, _, err := bindAddr(addr)
	if err != nil {
		return nil, usagef("--metrics %q: %v", addr, err)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	mux := httpserve.MetricsHandler(o.metrics.Handler(), opts)
	hs := httpserve.NewServer(mux, logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics listener", "err", err)
		}
	}()
	logger.Info("serving metrics and probes", "metrics", "http://"+ln.Addr().String()+"/metrics")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		<-done
	}, nil
}
