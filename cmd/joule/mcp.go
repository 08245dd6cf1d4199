package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/joulehook/joule/mcpserver"
)

func init() {
	register(&command{name: "mcp", summary: "serve receipts as MCP resources and gated workspace tools (stdio, or --http)", run: runMCP})
}

// MCPTokenFile holds the HTTP transport's bearer token in $JOULE_HOME.
const MCPTokenFile = "mcp-http.token"

const mcpUsage = `mcp [--workspace DIR] [--session ID] [--http 127.0.0.1:PORT [--token-file F]]

Serves MCP on stdin/stdout (what Claude Code, Cursor, Zed and the other MCP
hosts launch), or with --http over streamable HTTP at http://ADDR/mcp.
Resources: joule://steward, joule://sessions, joule://sessions/{session},
joule://sessions/{session}/receipts, joule://sessions/{session}/receipts/{seq},
joule://log/{index}, joule://checkpoint, joule://grants, joule://grants/{id}.
Tools: read_file, write_file, edit_file, list_directory, search, run_command
(each decided by the gate and sealed in --session), status, and gate (decide a
host hook payload). Over HTTP every request needs "Authorization: Bearer
TOKEN"; the token is $JOULE_MCP_TOKEN, else the --token-file's content (made
with a fresh random token, mode 0600, if missing; default
$JOULE_HOME/mcp-http.token). Only loopback addresses are served unless
--allow-remote is given; requests from non-loopback browser origins are refused.`

func runMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "mcp", mcpUsage)
	workspace := fs.String("workspace", "", "the directory the tools work in (default: the current directory)")
	session := fs.String("session", "", "the session the tool calls are sealed in (default: $JOULE_SESSION, else mcp-TIME-RANDOM)")
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio, e.g. 127.0.0.1:8931")
	tokenFile := fs.String("token-file", "", "HTTP bearer token file (default $JOULE_HOME/"+MCPTokenFile+")")
	remote := fs.Bool("allow-remote", false, "allow --http on a non-loopback address")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *addr != "" && !*remote && !mcpserver.LoopbackAddr(*addr) {
		return withHint(usagef("mcp: --http %s is not a loopback address", *addr), "use 127.0.0.1:PORT, or --allow-remote if you really mean to expose the server")
	}
	ws := *workspace
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return err
		}
	}
	if *session == "" {
		*session = os.Getenv("JOULE_SESSION")
	}
	if *session == "" {
		*session = newMCPSession()
	}
	ep, err := openEndpoint()
	if err != nil && *addr == "" {
		// A host launched us: it hides stderr and shows only "connection
		// closed" for a server that exits, so start and say it on every
		// request instead.
		reason := err.Error()
		var h *hintError
		if errors.As(err, &h) {
			reason += "; " + h.hint
		}
		fmt.Fprintf(e.stderr, "joule: mcp: %s (answering every request with this error)\n", reason)
		srv := mcpserver.NewUnavailable(reason, version())
		defer srv.Close()
		return srv.ServeStdio(ctx, e.stdin, e.stdout, e.stderr)
	}
	if err != nil {
		return err
	}
	defer ep.Close()
	g, err := ep.gate()
	if err != nil {
		return err
	}
	keys, err := ep.keys()
	if err != nil {
		return err
	}
	v, err := ep.verifier()
	if err != nil {
		return err
	}
	pub := ep.id.Public()
	srv, err := mcpserver.New(mcpserver.Config{
		Gate: g, Verifier: v, Keys: keys, Steward: ep.id.Steward, VerifierKey: ep.id.VerifierKey, PublicKey: pub[:],
		LogOrigin: logOrigin(ep.id.Steward), NoteSigner: ep.id.NoteSigner,
		Workspace: ws, Session: *session, Version: version(),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	if *addr == "" {
		return srv.ServeStdio(ctx, e.stdin, e.stdout, e.stderr)
	}
	tf := *tokenFile
	if tf == "" {
		tf = filepath.Join(ep.home, MCPTokenFile)
	}
	token, err := mcpToken(tf)
	if err != nil {
		return err
	}
	h, err := srv.HTTPHandler(token)
	if err != nil {
		return err
	}
	ln, err := listenOn(*addr, "give joule mcp --http 127.0.0.1:PORT")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(e.stderr, "joule mcp: serving http://%s%s (workspace %s, session %s); bearer token in %s\n", ln.Addr(), mcpserver.HTTPPath, ws, *session, tokenSource(tf))
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newMCPSession() string {
	b := make([]byte, 4)
	rand.Read(b)
	return "mcp-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

func tokenSource(file string) string {
	if os.Getenv("JOULE_MCP_TOKEN") != "" {
		return "$JOULE_MCP_TOKEN"
	}
	return file
}

// mcpToken returns $JOULE_MCP_TOKEN, else the token in file, creating the
// file with a fresh random token if it does not exist.
func mcpToken(file string) (string, error) {
	if t := os.Getenv("JOULE_MCP_TOKEN"); t != "" {
		if len(t) < 16 {
			return "", errors.New("mcp: $JOULE_MCP_TOKEN must be at least 16 characters")
		}
		return t, nil
	}
	if b, err := os.ReadFile(file); err == nil {
		fi, err := os.Stat(file)
		if err == nil && fi.Mode().Perm()&0o077 != 0 {
			return "", withHint(fmt.Errorf("mcp: token file %s is readable by others", file), "chmod 600 "+file)
		}
		t := strings.TrimSpace(string(b))
		if len(t) < 16 {
			return "", fmt.Errorf("mcp: token file %s holds fewer than 16 characters", file)
		}
		return t, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b)
	if err := os.WriteFile(file, []byte(t+"\n"), 0o600); err != nil {
		return "", err
	}
	return t, nil
}
