package mcpserver

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/tools"
	"github.com/airlock-mcp/airlock/upstream"
)

// MountOptions configure Mount.
type MountOptions struct {
	// Options choose the tools mounted (all the configuration can use
	// when zero).
	tools.Options
	// Store keeps selections and operations. Without one, only the read
	// tools work: the selection tools answer INTERNAL_ERROR.
	Store selection.Store
	// Background is the context operations run in after a commit call
	// returns; context.Background() when nil. Cancel it to stop them.
	Background context.Context
	// Logger receives airlock's logs, credentials redacted; nil discards
	// them.
	Logger *slog.Logger
	// Getenv reads the configuration's credentials; nil means os.Getenv.
	Getenv func(string) string
	// Observers are told of every tool call.
	Observers []Observer
}

// Mount adds airlock's tools, built from a parsed configuration, to an
// existing mcp-go server, as an agent runtime that serves tools of its own
// does. It initializes the configuration (credentials, contracts), attaches
// the store, and registers the tools Options enable. The server should also
// carry tools.Instructions (server.WithInstructions) and, for approval
// through the client, nothing more: airlock asks the user itself. Tasks
// are not served on a server of another's: its transports are its own.
//
// The returned Deps are the tools' shared state; call Deps.Engine.Wait
// after cancelling Background to let running operations record their end.
func Mount(ctx context.Context, srv *server.MCPServer, cfg *config.Config, opts MountOptions) (*tools.Deps, error) {
	rt, err := upstream.Initialize(ctx, cfg, upstream.Options{Logger: opts.Logger, Getenv: opts.Getenv})
	if err != nil {
		return nil, fmt.Errorf("initialize the configuration: %w", err)
	}
	d, err := tools.New(ctx, tools.Config{Runtime: rt, Logger: opts.Logger, Store: opts.Store, Background: opts.Background, Tools: opts.Options})
	if err != nil {
		return nil, fmt.Errorf("attach the store: %w", err)
	}
	specs, err := d.Enabled()
	if err != nil {
		return nil, err
	}
	s := &Server{d: d, mcp: srv, specs: map[string]tools.Spec{}, observers: opts.Observers}
	if err := s.register(srv, specs); err != nil {
		return nil, err
	}
	return d, nil
}
