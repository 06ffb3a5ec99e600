package tools

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/config"
	"github.com/airlock-mcp/airlock/selection"
	"github.com/airlock-mcp/airlock/upstream"
)

// MountOptions configure Mount.
type MountOptions struct {
	// Options choose the tools mounted (all the configuration can use
	// when zero).
	Options
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
}

// Mount adds airlock's tools, built from a parsed configuration, to an
// existing mcp-go server, as an agent runtime that serves tools of its own
// does. It initializes the configuration (credentials, contracts), attaches
// the store, and registers the tools Options enable. The server should also
// carry Instructions (server.WithInstructions) and, for approval through
// the client, nothing more: airlock asks the user itself.
//
// The returned Deps are the tools' shared state; call Deps.Engine.Wait
// after cancelling Background to let running operations record their end.
func Mount(ctx context.Context, srv *server.MCPServer, cfg *config.Config, opts MountOptions) (*Deps, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Background == nil {
		opts.Background = context.Background()
	}
	rt, err := upstream.Initialize(ctx, cfg, upstream.Options{Logger: opts.Logger, Getenv: opts.Getenv})
	if err != nil {
		return nil, fmt.Errorf("initialize the configuration: %w", err)
	}
	d := NewDeps(rt, opts.Logger)
	d.Options = opts.Options
	if opts.Store != nil {
		if err := d.UseStore(ctx, opts.Background, opts.Store); err != nil {
			return nil, fmt.Errorf("attach the store: %w", err)
		}
	}
	if err := d.register(srv); err != nil {
		return nil, err
	}
	return d, nil
}
