package mcpserver

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"sync"

	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-mcp/airlock/httpserve"
	"github.com/airlock-mcp/airlock/internal/jsonrpc"
)

// ServeStdio serves s over stdio (one JSON-RPC message per line) until in
// ends or ctx is done: the task service reads each line first and answers
// its own, everything else goes to mcp-go's stdio server, and both write to
// out one whole line at a time. errLog receives the transport's errors
// (nil: discarded). The caller is the local principal.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, errLog *log.Logger) error {
	stdio := server.NewStdioServer(s.mcp)
	if errLog == nil {
		errLog = log.New(io.Discard, "", 0)
	}
	stdio.SetErrorLogger(errLog)
	if s.tasks == nil {
		return stdio.Listen(ctx, in, out)
	}
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	var served sync.WaitGroup
	go func() {
		r := bufio.NewReader(in)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 && !s.serveLine(ctx, line, w, &served) {
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				pw.CloseWithError(err)
				return
			}
		}
	}()
	err := stdio.Listen(ctx, pr, w)
	_ = pr.Close()
	served.Wait()
	return err
}

// serveLine answers a line that is the task service's, on its own
// goroutine (a call may take a while, and the next line must not wait);
// false: mcp-go answers it.
func (s *Server) serveLine(ctx context.Context, line []byte, w *lineWriter, served *sync.WaitGroup) bool {
	msgs, err := jsonrpc.Parse(line)
	if err != nil || len(msgs) != 1 {
		return false
	}
	msg := msgs[0]
	who := httpserve.PrincipalFrom(ctx)
	if !s.tasks.takes(&msg, who) {
		return false
	}
	served.Add(1)
	go func() {
		defer served.Done()
		resp, _, ok := s.tasks.serve(ctx, &msg, who)
		if ok {
			_, _ = w.Write(append(resp, '\n'))
		}
	}()
	return true
}

// lineWriter writes whole lines, one at a time: mcp-go writes each of its
// messages in one Write, and so does the task service.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
