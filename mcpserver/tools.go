package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/joulehook/joule/core/gate"
	"github.com/joulehook/joule/core/grant"
)

// The gated tools, and the gate vocabulary (Claude Code's tool names) each
// is decided as, so one set of capability rules covers hooks and MCP alike.
const (
	ToolRead    = "read_file"      // Read
	ToolWrite   = "write_file"     // Write
	ToolEdit    = "edit_file"      // Edit
	ToolList    = "list_directory" // Glob
	ToolSearch  = "search"         // Grep
	ToolCommand = "run_command"    // Bash
	ToolStatus  = "status"         // not gated
	ToolGate    = "gate"           // decides a host hook payload
)

func (s *Server) addTools() {
	path := func(desc string) mcp.ToolOption {
		return mcp.WithString("path", mcp.Required(), mcp.Description(desc))
	}
	hints := func(readOnly, destructive, idempotent bool) []mcp.ToolOption {
		return []mcp.ToolOption{
			mcp.WithReadOnlyHintAnnotation(readOnly),
			mcp.WithDestructiveHintAnnotation(destructive),
			mcp.WithIdempotentHintAnnotation(idempotent),
			mcp.WithOpenWorldHintAnnotation(false),
		}
	}
	tool := func(name, title, desc string, h []mcp.ToolOption, opts ...mcp.ToolOption) mcp.Tool {
		all := append([]mcp.ToolOption{mcp.WithToolTitle(title), mcp.WithDescription(desc)}, h...)
		return mcp.NewTool(name, append(all, opts...)...)
	}
	lim := s.cfg.Limits
	s.mcp.AddTool(tool(ToolRead, "Read a file",
		fmt.Sprintf("Read a text file in the workspace (gated as Read). Whole files up to %d bytes; larger ones by line range with offset and limit. Binary files are refused.", lim.ReadBytes),
		hints(true, false, true),
		path("file path, absolute or relative to the workspace"),
		mcp.WithNumber("offset", mcp.Description("first line to return, 1-based"), mcp.Min(0)),
		mcp.WithNumber("limit", mcp.Description("how many lines to return"), mcp.Min(0)),
	), s.readFile)
	s.mcp.AddTool(tool(ToolWrite, "Write a file",
		"Create or overwrite a text file in the workspace (gated as Write); missing parent directories are created.",
		hints(false, true, true),
		path("file path, absolute or relative to the workspace"),
		mcp.WithString("content", mcp.Required(), mcp.Description("the whole new content")),
	), s.writeFile)
	s.mcp.AddTool(tool(ToolEdit, "Edit a file",
		"Replace an exact piece of text in a workspace file (gated as Edit). old_string must occur exactly once unless replace_all is set.",
		hints(false, true, false),
		path("file path, absolute or relative to the workspace"),
		mcp.WithString("old_string", mcp.Required(), mcp.Description("the exact text to replace, whitespace included")),
		mcp.WithString("new_string", mcp.Required(), mcp.Description("the replacement")),
		mcp.WithBoolean("replace_all", mcp.Description("replace every occurrence")),
	), s.editFile)
	s.mcp.AddTool(tool(ToolList, "List a directory",
		"List a workspace directory's entries with their type and size (gated as Glob).",
		hints(true, false, true),
		mcp.WithString("path", mcp.Description("directory, absolute or relative to the workspace; default: the workspace")),
	), s.listDirectory)
	s.mcp.AddTool(tool(ToolSearch, "Search files",
		"Search the workspace's text files for lines matching a regular expression (RE2 syntax) or a literal string, respecting .gitignore (gated as Grep).",
		hints(true, false, true),
		mcp.WithString("pattern", mcp.Required(), mcp.Description("regular expression (RE2), or literal text with literal=true")),
		mcp.WithString("path", mcp.Description("directory or file to search; default: the workspace")),
		mcp.WithString("glob", mcp.Description("only files whose name or relative path matches this glob, e.g. *.go")),
		mcp.WithBoolean("literal", mcp.Description("treat pattern as literal text")),
		mcp.WithBoolean("ignore_case", mcp.Description("match case-insensitively")),
		mcp.WithNumber("max_results", mcp.Description(fmt.Sprintf("most matching lines to return (default %d)", lim.SearchResults)), mcp.Min(1), mcp.Max(1000)),
	), s.searchFiles)
	s.mcp.AddTool(tool(ToolCommand, "Run a command",
		fmt.Sprintf("Run a shell command (bash) in the workspace directory (gated as Bash: every program in the line must be granted). Stdin is empty; stdout and stderr are merged and capped at %d bytes; the command is killed at its time limit (default %s).", lim.CommandOutput, lim.CommandTimeout),
		hints(false, true, false),
		mcp.WithString("command", mcp.Required(), mcp.Description("the command line")),
		mcp.WithNumber("timeout_seconds", mcp.Description(fmt.Sprintf("time limit in seconds, at most %d", int(lim.MaxTimeout.Seconds()))), mcp.Min(1)),
	), s.runCommand)
	s.mcp.AddTool(tool(ToolStatus, "joule status",
		"Show this server's workspace, session, active grant and budget left, receipt count and signing key. Not gated: it changes nothing.",
		hints(true, false, true),
	), s.status)
	s.mcp.AddTool(tool(ToolGate, "Gate a host tool call",
		"Decide a host's tool call before it runs: give the host's hook payload (Claude Code PreToolUse: session_id, tool_name, tool_input, cwd; or joule's ActionEvent: session_id, tool, input, cwd). Returns the sealed decision, with hookSpecificOutput for Claude Code.",
		hints(false, false, false), // it seals a receipt and may debit the budget
		mcp.WithString("session_id", mcp.Description("the host session id")),
		mcp.WithString("tool_name", mcp.Description("the host's tool name, e.g. Bash, Write, mcp__server__tool")),
		mcp.WithObject("tool_input", mcp.Description("the tool's arguments (an object, or its JSON text)")),
		mcp.WithString("cwd", mcp.Description("absolute working directory")),
		mcp.WithString("hook_event_name", mcp.Description("e.g. PreToolUse")),
		mcp.WithString("tool", mcp.Description("ActionEvent form: the tool name")),
		mcp.WithObject("input", mcp.Description("ActionEvent form: the tool input")),
		mcp.WithString("content_id", mcp.Description("the target's content id, if known")),
		mcp.WithObject("payload", mcp.Description("the whole hook payload as one object (or its JSON text), instead of the fields above")),
	), s.gateTool)
}

// decided is the gate's part of every gated tool result.
type decided struct {
	Decision string `json:"decision"`
	Code     string `json:"code"`
	Reason   string `json:"reason,omitempty"`
	Session  string `json:"session,omitempty"`
	Sequence uint64 `json:"sequence,omitempty"`
	Receipt  string `json:"receipt,omitempty"`     // chain hash of the decision receipt
	URI      string `json:"receipt_uri,omitempty"` // its joule:// resource
	DebitUJ  uint64 `json:"debit_uj"`
}

// decide puts one tool call to the gate as the Claude Code tool it
// corresponds to.
func (s *Server) decide(ctx context.Context, tool string, input any) (decided, bool) {
	b, err := json.Marshal(input)
	if err != nil {
		return decided{Decision: gate.Deny, Code: gate.CodeMalformed, Reason: err.Error()}, false
	}
	// The server has no way to hold a call for a person, so an ask is
	// sealed as the deny it becomes.
	res := s.cfg.Gate.DecideNoAsk(ctx, &gate.Event{SessionID: s.cfg.Session, Tool: tool, Input: b, Cwd: s.ws.root}, "joule's MCP server")
	d := decided{Decision: res.Decision, Code: res.Code, Reason: res.Reason, Session: res.Session, Sequence: res.Sequence, Receipt: res.Receipt, DebitUJ: res.DebitUJ}
	if res.Sequence > 0 {
		d.URI = receiptURI(res.Session, res.Sequence)
		s.subs.poke()
	}
	return d, res.Decision == gate.Allow
}

// line is a one-line account of the decision for the model.
func (d decided) line() string {
	if d.Receipt == "" {
		return fmt.Sprintf("joule gate: %s (%s), not sealed: %s", d.Decision, d.Code, d.Reason)
	}
	return fmt.Sprintf("joule gate: %s (%s), receipt %s (%s)", d.Decision, d.Code, d.Receipt, d.URI)
}

// denied is the result of a call the gate did not allow.
func denied(d decided) *mcp.CallToolResult {
	msg := fmt.Sprintf("denied by the joule gate (%s): %s", d.Code, d.Reason)
	r := mcp.NewToolResultError(msg)
	r.Content = append(r.Content, mcp.NewTextContent(d.line()))
	r.StructuredContent = map[string]any{"gate": d}
	return r
}

// failed is the result of an allowed call that then failed.
func failed(d decided, err error) *mcp.CallToolResult {
	r := mcp.NewToolResultError(err.Error())
	r.Content = append(r.Content, mcp.NewTextContent(d.line()))
	r.StructuredContent = map[string]any{"gate": d, "error": err.Error()}
	return r
}

// done is the result of an allowed call: its text, the decision line, and
// both as structured content.
func done(d decided, text string, result any) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text), mcp.NewTextContent(d.line())},
		StructuredContent: map[string]any{"gate": d, "result": result},
	}
}

// badArgs is the result of a call whose arguments cannot be read; nothing is
// decided or run.
func badArgs(tool string, err error) *mcp.CallToolResult {
	return mcp.NewToolResultError(fmt.Sprintf("%s: invalid arguments: %v", tool, err))
}

// bind reads the call's arguments strictly into v.
func bind(req mcp.CallToolRequest, v any) error { return decodeArgs(req, v, true) }

// decodeArgs reads the call's arguments into v; strict refuses unknown ones.
func decodeArgs(req mcp.CallToolRequest, v any, strict bool) error {
	args := req.GetRawArguments()
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%q must be %s, not %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
		}
		return err
	}
	return nil
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "float64", "uint64":
		return "a number"
	case "map", "struct":
		return "an object"
	}
	return kind
}

func (s *Server) readFile(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Path   string `json:"path"`
		Offset int    `json:"offset"`
		Limit  int    `json:"limit"`
	}
	if err := bind(req, &a); err != nil {
		return badArgs(ToolRead, err), nil
	}
	if a.Path == "" {
		return badArgs(ToolRead, errors.New(`"path" is required`)), nil
	}
	if a.Offset < 0 || a.Limit < 0 {
		return badArgs(ToolRead, errors.New("offset and limit must not be negative")), nil
	}
	in := map[string]any{"file_path": s.ws.abs(a.Path)}
	if a.Offset > 0 {
		in["offset"] = a.Offset
	}
	if a.Limit > 0 {
		in["limit"] = a.Limit
	}
	d, ok := s.decide(ctx, "Read", in)
	if !ok {
		return denied(d), nil
	}
	p, err := s.ws.resolve(a.Path)
	if err != nil {
		return failed(d, err), nil
	}
	text, truncated, err := readText(p, a.Offset, a.Limit, s.cfg.Limits.ReadBytes)
	if err != nil {
		return failed(d, err), nil
	}
	body := text
	if truncated {
		body += fmt.Sprintf("\n[truncated at %d bytes: read further with offset and limit]", s.cfg.Limits.ReadBytes)
	}
	return done(d, body, map[string]any{"path": p, "truncated": truncated, "bytes": len(text)}), nil
}

func (s *Server) writeFile(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := bind(req, &a); err != nil {
		return badArgs(ToolWrite, err), nil
	}
	if a.Path == "" || a.Content == nil {
		return badArgs(ToolWrite, errors.New(`"path" and "content" are required`)), nil
	}
	if n := int64(len(*a.Content)); n > s.cfg.Limits.EditBytes {
		return badArgs(ToolWrite, fmt.Errorf("content is %d bytes, over the %d-byte write limit", n, s.cfg.Limits.EditBytes)), nil
	}
	d, ok := s.decide(ctx, "Write", map[string]any{"file_path": s.ws.abs(a.Path), "content": *a.Content})
	if !ok {
		return denied(d), nil
	}
	p, err := s.ws.resolve(a.Path)
	if err != nil {
		return failed(d, err), nil
	}
	if err := writeAtomic(p, []byte(*a.Content)); err != nil {
		return failed(d, err), nil
	}
	return done(d, fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), s.ws.rel(p)), map[string]any{"path": p, "bytes": len(*a.Content)}), nil
}

func (s *Server) editFile(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Path       string  `json:"path"`
		Old        *string `json:"old_string"`
		New        *string `json:"new_string"`
		ReplaceAll bool    `json:"replace_all"`
	}
	if err := bind(req, &a); err != nil {
		return badArgs(ToolEdit, err), nil
	}
	if a.Path == "" || a.Old == nil || a.New == nil {
		return badArgs(ToolEdit, errors.New(`"path", "old_string" and "new_string" are required`)), nil
	}
	if n := int64(len(*a.Old) + len(*a.New)); n > s.cfg.Limits.EditBytes {
		return badArgs(ToolEdit, fmt.Errorf("old_string and new_string are %d bytes, over the %d-byte edit limit", n, s.cfg.Limits.EditBytes)), nil
	}
	d, ok := s.decide(ctx, "Edit", map[string]any{"file_path": s.ws.abs(a.Path), "old_string": *a.Old, "new_string": *a.New, "replace_all": a.ReplaceAll})
	if !ok {
		return denied(d), nil
	}
	p, err := s.ws.resolve(a.Path)
	if err != nil {
		return failed(d, err), nil
	}
	n, err := editText(p, *a.Old, *a.New, a.ReplaceAll, s.cfg.Limits.EditBytes)
	if err != nil {
		return failed(d, err), nil
	}
	return done(d, fmt.Sprintf("replaced %d occurrence(s) in %s", n, s.ws.rel(p)), map[string]any{"path": p, "replacements": n}), nil
}

func (s *Server) listDirectory(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := bind(req, &a); err != nil {
		return badArgs(ToolList, err), nil
	}
	d, ok := s.decide(ctx, "Glob", map[string]any{"pattern": "*", "path": s.ws.abs(a.Path)})
	if !ok {
		return denied(d), nil
	}
	p, err := s.ws.resolve(a.Path)
	if err != nil {
		return failed(d, err), nil
	}
	ents, truncated, err := listDir(p, s.cfg.Limits.ListEntries)
	if err != nil {
		return failed(d, err), nil
	}
	var b strings.Builder
	for _, e := range ents {
		switch e.Type {
		case "dir":
			fmt.Fprintf(&b, "%s/\n", e.Name)
		case "symlink":
			fmt.Fprintf(&b, "%s -> %s\n", e.Name, e.Target)
		case "file":
			fmt.Fprintf(&b, "%s\t%d\n", e.Name, e.Size)
		default:
			fmt.Fprintf(&b, "%s\t(%s)\n", e.Name, e.Type)
		}
	}
	if truncated {
		fmt.Fprintf(&b, "[only the first %d entries]\n", s.cfg.Limits.ListEntries)
	}
	if len(ents) == 0 {
		b.WriteString("(empty)\n")
	}
	return done(d, b.String(), map[string]any{"path": p, "entries": ents, "truncated": truncated}), nil
}

func (s *Server) searchFiles(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		Literal    bool   `json:"literal"`
		IgnoreCase bool   `json:"ignore_case"`
		Max        int    `json:"max_results"`
	}
	if err := bind(req, &a); err != nil {
		return badArgs(ToolSearch, err), nil
	}
	re, err := compileSearch(a.Pattern, a.Literal, a.IgnoreCase)
	if err != nil {
		return badArgs(ToolSearch, err), nil
	}
	if a.Max <= 0 {
		a.Max = s.cfg.Limits.SearchResults
	}
	a.Max = min(a.Max, 1000)
	in := map[string]any{"pattern": a.Pattern, "path": s.ws.abs(a.Path)}
	if a.Glob != "" {
		in["glob"] = a.Glob
	}
	d, ok := s.decide(ctx, "Grep", in)
	if !ok {
		return denied(d), nil
	}
	p, err := s.ws.resolve(a.Path)
	if err != nil {
		return failed(d, err), nil
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.Limits.CommandTimeout)
	defer cancel()
	ms, truncated, err := search(sctx, s.ws.root, p, searchQuery{re: re, glob: a.Glob, max: a.Max, maxSize: s.cfg.Limits.SearchFileSize})
	timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
	if timedOut {
		err = nil // report what was found in the time allowed
	}
	if err != nil {
		return failed(d, err), nil
	}
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
	}
	if len(ms) == 0 {
		b.WriteString("no matches\n")
	}
	switch {
	case timedOut:
		fmt.Fprintf(&b, "[search stopped at the %s time limit: narrow it with path or glob]\n", s.cfg.Limits.CommandTimeout)
	case truncated:
		fmt.Fprintf(&b, "[stopped at %d matches]\n", a.Max)
	}
	return done(d, b.String(), map[string]any{"matches": ms, "truncated": truncated || timedOut}), nil
}

func (s *Server) runCommand(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var a struct {
		Command string  `json:"command"`
		Timeout float64 `json:"timeout_seconds"`
	}
	if err := bind(req, &a); err != nil {
		return badArgs(ToolCommand, err), nil
	}
	if strings.TrimSpace(a.Command) == "" {
		return badArgs(ToolCommand, errors.New(`"command" is required`)), nil
	}
	timeout := s.cfg.Limits.CommandTimeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout*float64(time.Second)), s.cfg.Limits.MaxTimeout)
	}
	in := map[string]any{"command": a.Command, "timeout": timeout.Milliseconds()}
	d, ok := s.decide(ctx, "Bash", in)
	if !ok {
		return denied(d), nil
	}
	res, err := runCommand(ctx, s.ws.root, a.Command, timeout, s.cfg.Limits.CommandOutput)
	if err != nil {
		return failed(d, err), nil
	}
	var b strings.Builder
	b.WriteString(res.Output)
	if res.Truncated {
		fmt.Fprintf(&b, "\n[output truncated: %d of %d bytes shown]", len(res.Output), res.OutputBytes)
	}
	switch {
	case res.TimedOut:
		fmt.Fprintf(&b, "\n[killed at the %s time limit]", timeout)
	case res.ExitCode != 0:
		fmt.Fprintf(&b, "\n[exit status %d]", res.ExitCode)
	}
	r := done(d, b.String(), res)
	r.IsError = res.TimedOut || res.ExitCode != 0
	return r, nil
}

func (s *Server) status(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	st := map[string]any{
		"workspace":    s.ws.root,
		"session":      s.cfg.Session,
		"session_uri":  sessionURI(s.cfg.Session),
		"steward":      s.cfg.Steward,
		"verifier_key": s.cfg.VerifierKey,
	}
	if sum, err := s.sums.get(ctx, s.cfg.Session); err == nil {
		st["receipts"] = sum.Receipts
		st["chain_head"] = sum.Head
	} else {
		st["receipts"] = 0
	}
	b := budgetOf(ctx, s, s.cfg.Session)
	st["budget"] = b
	text := fmt.Sprintf("workspace %s, session %s (%v receipts), steward %s", s.ws.root, s.cfg.Session, st["receipts"], s.cfg.Steward)
	if b.Error != "" {
		text += "; no usable grant: " + b.Error
	} else {
		text += fmt.Sprintf("; grant %s, budget left %s", b.Grant, grant.FormatEnergy(b.LeftUJ))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}, StructuredContent: st}, nil
}
