package mcpserver

import (
	"context"
	_ "embed"
	"encoding/json"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/envelope"
	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/redact"
	"github.com/airlock-mcp/airlock/tools"
)

// MCP Apps (the io.modelcontextprotocol/ui extension): a client that
// declares it renders airlock's approval view beside preview_selection's
// result and beside a commit's that needs approval; the view's Approve and
// Reject call decide_selection, a tool listed to that client only, marked
// for views only. A client that does not declare the extension is listed
// exactly the tools it was before, and asked for approval as before.

// AppsExtension is the MCP Apps extension's identifier.
const AppsExtension = "io.modelcontextprotocol/ui"

// AppMIMEType is the MIME type of an MCP Apps view.
const AppMIMEType = "text/html;profile=mcp-app"

// ApprovalViewURI is the approval view's resource.
const ApprovalViewURI = "ui://airlock/approval-view.html"

// ViewMetaKey is the _meta member of a result that carries the approval
// view's data (tools.AppView): hosts give a result's _meta to the view and
// keep it out of the model's context.
const ViewMetaKey = "airlock/approval"

//go:embed approval_view.html
var approvalViewHTML string

// viewCSP is the view's Content-Security-Policy as MCP Apps declares it:
// no origin besides the view's own, for anything (the host's default
// policy already denies every other origin; none is listed here).
var viewCSP = map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}, "frameDomains": []string{}, "baseUriDomains": []string{}}

// viewResourceMeta is the view resource's _meta: the CSP, no permissions,
// and a border the host draws.
func viewResourceMeta() map[string]any {
	return map[string]any{"ui": map[string]any{"csp": viewCSP, "permissions": map[string]any{}, "prefersBorder": true}}
}

// clientRendersApps reports whether the calling client declared MCP Apps
// with HTML views (per request from 2026-07-28, at initialization before).
func clientRendersApps(ctx context.Context) bool {
	var caps *mcp.ClientCapabilities
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		caps = info.ClientCapabilities
	} else if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
		c := s.GetClientCapabilities()
		caps = &c
	}
	if caps == nil {
		return false
	}
	ext, ok := caps.Extensions[AppsExtension].(map[string]any)
	if !ok {
		return false
	}
	types, listed := ext["mimeTypes"].([]any)
	return !listed || slices.Contains(types, any(AppMIMEType))
}

// linksView are the tools whose results the approval view is shown beside.
var linksView = []string{tools.PreviewSelectionName, tools.CommitBulkActionName}

// appsFilter lists, to a client that renders views, the tools that link
// the view with their _meta.ui, and decide_selection marked for views
// only; to any other client, the tools as they were, without
// decide_selection (and mcp-go refuses its calls).
func appsFilter(ctx context.Context, list []mcp.Tool) []mcp.Tool {
	apps := clientRendersApps(ctx)
	p := httpserve.PrincipalFrom(ctx)
	out := make([]mcp.Tool, 0, len(list))
	for _, t := range list {
		switch {
		case tools.IsAppOnly(t.Name):
			if !apps || !tools.MayCall(p, tools.CommitBulkActionName) {
				continue
			}
			t.Meta = mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": ApprovalViewURI, "visibility": []string{"app"}}})
		case apps && slices.Contains(linksView, t.Name):
			// The flat key is the form hosts read before the nested one.
			t.Meta = mcp.NewMetaFromMap(map[string]any{"ui": map[string]any{"resourceUri": ApprovalViewURI}, "ui/resourceUri": ApprovalViewURI})
		}
		out = append(out, t)
	}
	return out
}

// addApprovalView registers the view's resource.
func addApprovalView(srv *server.MCPServer) {
	res := mcp.NewResource(ApprovalViewURI, "airlock approval view",
		mcp.WithResourceDescription("The frozen manifest of a selection, and Approve and Reject, for hosts that render MCP Apps."),
		mcp.WithMIMEType(AppMIMEType))
	srv.AddResource(res, func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: ApprovalViewURI, MIMEType: AppMIMEType, Text: approvalViewHTML, Meta: viewResourceMeta()}}, nil
	})
}

// withViewMeta puts the approval view's data in the result's _meta,
// redacted as the result is.
func withViewMeta(res *mcp.CallToolResult, v *tools.AppView, red *redact.Redactor) *mcp.CallToolResult {
	if v == nil {
		return res
	}
	b, err := json.Marshal(v)
	if err != nil {
		return res
	}
	// I-JSON, as the result itself: the view's manifest holds upstream
	// values, which a float64 here, or the view's JavaScript, would round.
	var clean map[string]any
	if json.Unmarshal(envelope.IJSON(red.Bytes(b)), &clean) != nil {
		return res
	}
	res.Meta = mcp.NewMetaFromMap(map[string]any{ViewMetaKey: clean})
	return res
}
