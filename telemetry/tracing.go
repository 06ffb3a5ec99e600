package telemetry

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream/transport"
)

// Tracing makes OpenTelemetry spans: one per tool call and one per attempt
// of an upstream request, its child when the call made it. Attributes hold
// names from fixed sets or the configuration, statuses and counts: never an
// argument, a URL's path or query, a header or an upstream's words, so that
// no credential (a bearer token, an API key in a query) can reach a trace.
type Tracing struct {
	tracer trace.Tracer
	tools  map[string]bool
}

// NewTracing traces with the tracer provider's airlock tracer.
func NewTracing(tp trace.TracerProvider) *Tracing {
	t := &Tracing{tracer: tp.Tracer("github.com/airlock-mcp/airlock"), tools: map[string]bool{}}
	for _, name := range tools.ToolNames() {
		t.tools[name] = true
	}
	return t
}

// StartCall opens a span around a tool call (it observes the MCP server's
// calls: see mcpserver.Observer); the upstream requests the call makes are
// its children.
func (t *Tracing) StartCall(ctx context.Context, tool string) (context.Context, func(tools.Outcome)) {
	name := bounded(t.tools, tool)
	ctx, span := t.tracer.Start(ctx, "tools/call "+name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.tool.name", name)))
	return ctx, func(o tools.Outcome) {
		span.SetAttributes(attribute.String("airlock.status", o.Status))
		if o.Complete != nil {
			span.SetAttributes(attribute.Bool("airlock.complete", *o.Complete))
		}
		if o.Status == string(envelope.StatusError) {
			span.SetStatus(codes.Error, "the tool answered with a problem")
		}
		span.End()
	}
}

// Transport opens a span around each attempt of a request to an upstream.
func (t *Tracing) Transport(name string, next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		ctx, span := t.tracer.Start(req.Context(), "upstream "+req.Method, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(
				attribute.String("http.request.method", req.Method),
				attribute.String("airlock.upstream", name),
				attribute.String("server.address", req.URL.Hostname()),
				attribute.Int("http.request.resend_count", max(transport.Attempt(req.Context())-1, 0)),
			))
		defer span.End()
		resp, err := next.RoundTrip(req.WithContext(ctx))
		if err != nil {
			span.SetStatus(codes.Error, "the request failed without an answer")
			span.SetAttributes(attribute.String("error.type", errorType(ctx)))
			return resp, err
		}
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 500 {
			span.SetStatus(codes.Error, "")
		}
		return resp, err
	})
}

// errorType names a transport failure by class, never by its message
// (which may quote the URL).
func errorType(ctx context.Context) string {
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "timeout"
	case ctx.Err() != nil:
		return "canceled"
	default:
		return "transport"
	}
}

// WrapTransport is the upstream.Options.WrapTransport that feeds m and t
// (either may be nil; nil when both are).
func WrapTransport(m *Metrics, t *Tracing) func(string, http.RoundTripper) http.RoundTripper {
	if m == nil && t == nil {
		return nil
	}
	return func(name string, next http.RoundTripper) http.RoundTripper {
		if m != nil {
			next = m.Transport(name, next)
		}
		if t != nil {
			next = t.Transport(name, next)
		}
		return next
	}
}
