// Package mcpserver puts airlock's tools (package tools) on an MCP server
// (mcp-go): it registers them with their annotations and schemas, turns
// each MCP request into a tools.Call and each envelope into a tool result
// (redacted, remembered, with panics answered as INTERNAL_ERROR), asks the
// user through the client (the input requests of protocol 2026-07-28, or
// elicitation/create for earlier clients, over every transport), sends
// progress notifications, serves long calls as tasks on every transport,
// and tells its observers each call's typed outcome.
//
// It is the only package of airlock that imports mcp-go (besides cmd). It
// never imports a metrics, tracing or token library: observers and the
// HTTP guard are given to it.
package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/tools"
)

// Observer is told of every tool call: StartCall as the call begins (the
// context it returns is the call's from then on, so that a span it opens
// is the parent of what the call does), and the function StartCall returns
// once, with the call's typed outcome.
type Observer interface {
	StartCall(ctx context.Context, tool string) (context.Context, func(tools.Outcome))
}

// Options configure a Server.
type Options struct {
	// Observers are told of every tool call (metrics, traces).
	Observers []Observer
	// Tasks, when set, serves long calls as tasks to clients that ask for
	// them (see TaskOptions); it needs the deps' store.
	Tasks *TaskOptions
	// Version is the version the server reports to clients (its
	// serverInfo); DevelVersion when empty. The program that serves
	// airlock knows it (cmd/airlock), not the library.
	Version string
}

// DevelVersion is the version a server reports when it is given none.
const DevelVersion = "(devel)"

// Server is airlock's MCP server: the tools of one Deps, registered on an
// mcp-go server, and the services that stand beside it (tasks).
type Server struct {
	d         *tools.Deps
	mcp       *server.MCPServer
	specs     map[string]tools.Spec
	observers []Observer
	tasks     *tasks
	version   string
}

// ToolsListTTL is the freshness hint of tools/list for clients of protocol
// 2026-07-28: the list changes only when the configuration does.
const ToolsListTTL = 5 * time.Minute

// NewServer assembles the MCP server with every tool d enables.
func NewServer(d *tools.Deps, opts Options) (*Server, error) {
	srvOpts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithInstructions(tools.Instructions),
		server.WithToolFilter(scopeFilter),
		// The tools change only with the configuration (a restart), but
		// which ones a caller sees may depend on who asks: private.
		server.WithMethodCacheHints(mcp.MethodToolsList, ToolsListTTL.Milliseconds(), mcp.CacheScopePrivate),
	}
	specs, err := d.Enabled()
	if err != nil {
		return nil, err
	}
	// The extensions, advertised in server/discover and initialize.
	extensions := map[string]any{}
	if opts.Tasks != nil {
		if d.Store == nil {
			return nil, errors.New("tasks need a store")
		}
		extensions[TasksExtension] = map[string]any{}
	}
	// Where a selection can be previewed, a client that renders MCP Apps
	// is shown the approval view and may call decide_selection.
	view := slices.ContainsFunc(specs, func(sp tools.Spec) bool { return sp.Name == tools.PreviewSelectionName })
	if view {
		extensions[AppsExtension] = map[string]any{}
		specs = append(specs, tools.DecideSelection(d))
		srvOpts = append(srvOpts, server.WithResourceCapabilities(false, false), server.WithToolFilter(appsFilter))
	}
	if len(extensions) > 0 {
		srvOpts = append(srvOpts, server.WithExtensions(extensions))
	}
	version := cmp.Or(opts.Version, DevelVersion)
	s := &Server{d: d, mcp: server.NewMCPServer("airlock", version, srvOpts...), specs: map[string]tools.Spec{}, observers: opts.Observers, version: version}
	if view {
		addApprovalView(s.mcp)
	}
	if err := s.register(s.mcp, specs); err != nil {
		return nil, err
	}
	if opts.Tasks != nil {
		s.tasks = newTasks(s, *opts.Tasks)
	}
	return s, nil
}

// MCP is the mcp-go server, for a transport or middleware of mcp-go's
// (NewHTTPHandler and ServeStdio serve it with the tasks beside it).
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// register checks the specs' annotations, then adds them to srv.
func (s *Server) register(srv *server.MCPServer, specs []tools.Spec) error {
	for _, sp := range specs {
		if err := sp.Check(); err != nil {
			return err
		}
	}
	for _, sp := range specs {
		s.specs[sp.Name] = sp
		srv.AddTool(Tool(sp), s.handler(sp))
	}
	return nil
}

// Tool is the MCP tool definition of a spec: its schemas and its four
// annotations, each set.
func Tool(s tools.Spec) mcp.Tool {
	t := mcp.NewTool(s.Name,
		mcp.WithDescription(s.Description),
		mcp.WithRawInputSchema(s.InputSchema()),
		mcp.WithRawOutputSchema(s.OutputSchema()),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           s.Title,
			ReadOnlyHint:    mcp.ToBoolPtr(s.Hints.ReadOnly.Bool()),
			DestructiveHint: mcp.ToBoolPtr(s.Hints.Destructive.Bool()),
			IdempotentHint:  mcp.ToBoolPtr(s.Hints.Idempotent.Bool()),
			OpenWorldHint:   mcp.ToBoolPtr(s.Hints.OpenWorld.Bool()),
		}),
	)
	t.InputSchema = mcp.ToolInputSchema{}
	t.Title = s.Title
	return t
}

// scopeFilter offers an OAuth principal only the tools its scopes allow
// (tools/list), and mcp-go refuses a call to any other.
func scopeFilter(ctx context.Context, list []mcp.Tool) []mcp.Tool {
	p := httpserve.PrincipalFrom(ctx)
	if !p.OAuth {
		return list
	}
	return slices.DeleteFunc(slices.Clone(list), func(t mcp.Tool) bool { return !tools.MayCall(p, t.Name) })
}

// handler serves one tool: the call's arguments, client, principal and
// capabilities from the request, then exec; a current client is answered
// an input request as the tool asks it, an earlier one is asked here and
// the call runs again with the answer.
func (s *Server) handler(spec tools.Spec) server.ToolHandlerFunc {
	red := s.d.Redactor
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
		ctx, obs := s.observe(ctx, spec.Name)
		raw, merr := rawArguments(req)
		call := newCall(raw, clientInfo(ctx), httpserve.PrincipalFrom(ctx))
		call.CanAsk, call.Answer, call.Progress = clientCanElicit(ctx), answerFromParams(req.Params.MultiRoundTripParams), progressSender(ctx, req)
		call.Apps = clientRendersApps(ctx)
		log := s.logFor(spec, call)
		defer func() {
			// exec recovers the tool's own panic; this is airlock's code
			// around it (asking the client, rendering): the process
			// serves on, and the caller learns nothing of the cause.
			if p := recover(); p != nil {
				env := panicked(log, call.RequestID, p)
				obs.answered(env)
				res, err = redactedResult(env, red), nil
			}
		}()
		if merr != nil {
			env := envelope.ErrorEnvelope(envelope.InvalidArguments([]envelope.FieldError{
				envelope.NewFieldError("arguments", envelope.FieldType, map[string]any{}),
			}).WithRequest(call.RequestID))
			obs.answered(env)
			return s.render(spec, env, nil), nil
		}
		env := s.exec(ctx, spec, call, log)
		if call.Ask != nil && modernRequest(ctx) {
			log.Info("tool call asks the client for input")
			obs.became(tools.StatusInputRequired)
			return inputResult(redactedAsk(call.Ask, red)), nil
		}
		for round := 0; call.Ask != nil; round++ {
			// A client of an earlier protocol is asked here, and the
			// call runs again with the answer, as a client of the
			// current protocol would call again.
			ask := redactedAsk(call.Ask, red)
			call.Ask = nil
			answer, err := askClient(ctx, ask)
			if err == nil && round == maxInputRounds {
				err = errors.New("the tool asked for input too many times")
			}
			if err != nil {
				log.Warn("the client could not be asked for approval", "err", err)
				p := envelope.NewProblem(envelope.ProblemClientApprovalMissing,
					"The client declared that it can show approval requests, but the request was not delivered or not answered in time. Nothing was approved or written.")
				if errors.Is(err, errAnsweredElsewhere) {
					p = envelope.NewProblem(envelope.ProblemElicitationMisrouted, "")
				}
				p.StateChanged = envelope.StateNone
				env = envelope.ErrorEnvelope(p)
				s.finish(spec, call, env, log)
				break
			}
			log.Info("tool call asked the client for input")
			call.Answer = answer
			env = s.exec(ctx, spec, call, log)
		}
		obs.answered(env)
		return s.render(spec, env, call.View), nil
	}
}

// redactedResult renders the envelope as Result does, with the secrets
// removed from its bytes: the last step before a result leaves airlock.
func redactedResult(env *envelope.Envelope, red *redact.Redactor, data ...envelope.TextDefault) *mcp.CallToolResult {
	env.Finish()
	b := red.Bytes(env.Marshal())
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(envelope.Text(b, data...)))},
		StructuredContent: json.RawMessage(b),
		IsError:           env.Status == envelope.StatusError,
	}
}

// redactedAsk removes the secrets from a request for input (an approval
// form built from a selection).
func redactedAsk(ask *tools.InputRequest, red *redact.Redactor) *tools.InputRequest {
	if red.Empty() {
		return ask
	}
	b, err := json.Marshal(ask)
	if err != nil {
		return ask
	}
	clean := red.Bytes(b)
	if string(clean) == string(b) {
		return ask
	}
	var out tools.InputRequest
	if err := json.Unmarshal(clean, &out); err != nil {
		// What cannot be read back is not sent: an empty form.
		return &tools.InputRequest{Key: ask.Key, State: ask.State, Message: "[redacted]", Schema: map[string]any{"type": "object"}}
	}
	return &out
}

// elicitation is an input request as elicitation/create's params.
func elicitation(ask *tools.InputRequest) mcp.ElicitationParams {
	return mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: ask.Message, RequestedSchema: ask.Schema}
}

// inputRequests are an input request as a result's inputRequests.
func inputRequests(ask *tools.InputRequest) mcp.InputRequests {
	return mcp.InputRequests{ask.Key: mcp.NewElicitationInputRequest(elicitation(ask))}
}

// inputResult is the result that asks a client of protocol 2026-07-28 for
// input: it answers by calling again.
func inputResult(ask *tools.InputRequest) *mcp.CallToolResult {
	return server.NewInputRequestBuilder(ask.State).Elicit(ask.Key, elicitation(ask)).ToolResult()
}

// answerFromParams is the client's answer to an earlier input request, from a
// retried call's params (nil on a first call).
func answerFromParams(p mcp.MultiRoundTripParams) *tools.InputAnswer {
	if p.RequestState == "" && len(p.InputResponses) == 0 {
		return nil
	}
	a := &tools.InputAnswer{State: p.RequestState}
	for _, key := range slices.Sorted(maps.Keys(p.InputResponses)) {
		res := server.ElicitationResponse(p.InputResponses, key)
		if res == nil {
			continue
		}
		a.Key, a.Action = key, string(res.Action)
		a.Content, _ = res.Content.(map[string]any)
		break
	}
	return a
}

// progressSender sends a call's progress as notifications/progress when
// the request carries a progress token (nil otherwise).
func progressSender(ctx context.Context, req mcp.CallToolRequest) func(tools.Progress) {
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return nil
	}
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return nil
	}
	tok := req.Params.Meta.ProgressToken
	return func(p tools.Progress) {
		params := map[string]any{"progressToken": tok, "progress": p.Progress, "message": p.Message}
		if p.Total != nil {
			params["total"] = *p.Total
		}
		_ = srv.SendNotificationToClient(ctx, "notifications/progress", params)
	}
}

// clientInfo names the calling MCP client, as it introduced itself.
func clientInfo(ctx context.Context) string {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil && info.ClientInfo.Name != "" {
		return clientName(info.ClientInfo.Name, info.ClientInfo.Version)
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		if info := s.GetClientInfo(); info.Name != "" {
			return clientName(info.Name, info.Version)
		}
	}
	return "mcp client"
}

func clientName(name, version string) string {
	if name == "" {
		return "mcp client"
	}
	return "mcp client " + envelope.SafeName(name) + " " + envelope.SafeName(version)
}

func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	switch a := req.GetRawArguments().(type) {
	case json.RawMessage:
		if len(a) == 0 {
			return json.RawMessage("{}"), nil
		}
		return a, nil
	case nil:
		return json.RawMessage("{}"), nil
	default:
		b, err := json.Marshal(a)
		return b, err
	}
}

func newRequestID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// Result renders an envelope as an MCP tool result: the whole envelope as
// structured content and, as text, the same JSON without the members that
// hold their defaults (envelope.Text); isError when it carries a problem.
func Result(env *envelope.Envelope) *mcp.CallToolResult {
	env.Finish()
	b := env.Marshal()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(envelope.Text(b)))},
		StructuredContent: json.RawMessage(b),
		IsError:           env.Status == envelope.StatusError,
	}
}
