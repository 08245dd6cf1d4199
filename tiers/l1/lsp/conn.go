// Package lsp drives language servers over stdio as a minimal LSP client, so
// that L1 can make lawful edits (renames, organize imports) in languages
// other than Go: the server computes a WorkspaceEdit, this package applies it
// to the workspace snapshot and checks that the project type-checks as well
// as before; tiers/l1 turns the result into one signed op.
//
// Only what those requests need is spoken: initialize, didOpen,
// textDocument/rename, textDocument/codeAction and workspace/executeCommand
// from the client; workspace/configuration, workspace/applyEdit,
// client/registerCapability and window/workDoneProgress/create answered
// for the server. The server never writes a file: every edit goes through
// the returned successor tree.
package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// message is one JSON-RPC 2.0 message, request, notification or response.
type message struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id,omitempty"`
	Method  string           `json:"method,omitempty"`
	Params  json.RawMessage  `json:"params,omitempty"`
	Result  json.RawMessage  `json:"result,omitempty"`
	Error   *RPCError        `json:"error,omitempty"`
}

// RPCError is an error response from the server.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// conn is one running server: requests are sent one at a time, and the
// server's own requests are answered while a response is awaited.
type conn struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	msgs    chan *message
	readErr error         // set before msgs is closed
	done    chan struct{} // closed when the server's stdout closes
	nextID  int
	stderr  *tail

	// onRequest answers a server→client request; nil result is JSON null.
	onRequest func(method string, params json.RawMessage) (any, error)
	wmu       sync.Mutex
}

// tail keeps the last few KiB a server wrote to stderr, for error messages.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// start runs argv in dir as a language server on stdio, in its own process
// group so that close can end it and everything it spawned.
func start(argv []string, dir string) (*conn, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &conn{cmd: cmd, in: in, msgs: make(chan *message, 64), stderr: &tail{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %v", argv[0], err)
	}
	go c.read(bufio.NewReader(out))
	return c, nil
}

// read decodes framed messages until the server's stdout closes.
func (c *conn) read(r *bufio.Reader) {
	defer close(c.done)
	defer close(c.msgs)
	for {
		n := -1
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				c.readErr = err
				return
			}
			line = strings.TrimRight(line, "\r\n")
			if line == "" {
				break
			}
			k, v, ok := strings.Cut(line, ":")
			if ok && strings.EqualFold(strings.TrimSpace(k), "Content-Length") {
				if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 0 || n > 256<<20 {
					c.readErr = fmt.Errorf("bad Content-Length %q", v)
					return
				}
			}
		}
		if n < 0 {
			c.readErr = errors.New("message without Content-Length")
			return
		}
		body := make([]byte, n)
		if _, err := io.ReadFull(r, body); err != nil {
			c.readErr = err
			return
		}
		m := new(message)
		if err := json.Unmarshal(body, m); err != nil {
			c.readErr = fmt.Errorf("bad message from server: %v", err)
			return
		}
		c.msgs <- m
	}
}

// exited reports whether the server's output has ended.
func (c *conn) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *conn) write(m *message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := fmt.Fprintf(c.in, "Content-Length: %d\r\n\r\n", len(b)); err != nil {
		return err
	}
	_, err = c.in.Write(b)
	return err
}

func (c *conn) notify(method string, params any) error {
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.write(&message{Method: method, Params: b})
}

// call sends a request and waits for its response, answering the server's
// requests meanwhile; result may be nil to discard the response body.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	errs, err := c.callAll(ctx, []request{{method, params, result}})
	if err != nil {
		return err
	}
	return errs[0]
}

// request is one call of callAll.
type request struct {
	method         string
	params, result any
}

// callAll sends every request at once and waits for all their responses:
// the server reads the next while it answers one, so n requests cost one
// round trip, not n. errs[i] is the error of request i; err ends the whole
// batch (the context, the server gone, a write that failed).
func (c *conn) callAll(ctx context.Context, reqs []request) (errs []error, err error) {
	pending := map[string]int{}
	for i, r := range reqs {
		c.nextID++
		id := json.RawMessage(strconv.Itoa(c.nextID))
		b, err := json.Marshal(r.params)
		if err != nil {
			return nil, err
		}
		if err := c.write(&message{ID: &id, Method: r.method, Params: b}); err != nil {
			return nil, fmt.Errorf("%s: writing to the server: %v", r.method, err)
		}
		pending[string(id)] = i
	}
	errs = make([]error, len(reqs))
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m, ok := <-c.msgs:
			if !ok {
				return nil, fmt.Errorf("%s: the server exited (%v): %s", reqs[0].method, c.readErr, c.stderr)
			}
			switch {
			case m.Method != "" && m.ID != nil:
				c.answer(m)
			case m.Method != "":
				// a notification: diagnostics, progress, log messages
			case m.ID != nil:
				i, mine := pending[string(*m.ID)]
				if !mine {
					continue // the answer to a request abandoned earlier
				}
				delete(pending, string(*m.ID))
				r := reqs[i]
				switch {
				case m.Error != nil:
					errs[i] = fmt.Errorf("%s: %w", r.method, m.Error)
				case r.result != nil:
					if len(m.Result) == 0 {
						m.Result = json.RawMessage("null")
					}
					errs[i] = json.Unmarshal(m.Result, r.result)
				}
			}
		}
	}
	return errs, nil
}

func (c *conn) answer(m *message) {
	var res any
	var err error
	if c.onRequest != nil {
		res, err = c.onRequest(m.Method, m.Params)
	}
	reply := &message{ID: m.ID}
	if err != nil {
		reply.Error = &RPCError{Code: -32601, Message: err.Error()}
	} else {
		b, _ := json.Marshal(res)
		reply.Result = b
	}
	_ = c.write(reply)
}

// close shuts the server down politely, then ends its process group.
func (c *conn) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if c.call(ctx, "shutdown", nil, nil) == nil {
		_ = c.notify("exit", nil)
	}
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-done
	for range c.msgs {
	}
}
