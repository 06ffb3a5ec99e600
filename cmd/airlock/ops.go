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

	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// operability is what serve offers operators: Prometheus metrics, optional
// OpenTelemetry traces, and the health probes.
type operability struct {
	metrics  *tools.Metrics
	tracing  *tools.Tracing
	shutdown func(context.Context) error
}

// tracingEnabled reports whether the standard OpenTelemetry environment
// names an OTLP endpoint for traces.
func tracingEnabled() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newOperability builds the metrics and, when the environment names an
// OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, with the exporter's other standard
// variables), traces sent there over OTLP/HTTP.
func newOperability(ctx context.Context, logger *slog.Logger) (*operability, error) {
	o := &operability{metrics: tools.NewMetrics(), shutdown: func(context.Context) error { return nil }}
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
			attribute.String("service.version", tools.Version))); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	o.tracing = tools.NewTracing(tp)
	o.shutdown = tp.Shutdown
	logger.Info("sending traces over OTLP")
	return o, nil
}

// upstreamOptions makes the upstream clients feed the metrics and traces.
func (o *operability) upstreamOptions(opts *upstream.Options) {
	opts.WrapTransport = tools.WrapTransport(o.metrics, o.tracing)
}

// attach gives the tools the metrics and traces (before the store and the
// server are built).
func (o *operability) attach(deps *tools.Deps) {
	deps.Metrics, deps.Tracing = o.metrics, o.tracing
	o.metrics.Observe(deps.Runtime)
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
// tools.Metrics.MetricsHandler).
func (o *operability) serveMetrics(ctx context.Context, addr string, opts tools.HTTPOptions) (func(), error) {
	logger := opts.Logger
	bind, _, err := bindAddr(addr)
	if err != nil {
		return nil, usagef("--metrics %q: %v", addr, err)
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	mux := o.metrics.MetricsHandler(opts)
	hs := tools.NewHTTPServer(mux, logger)
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
