package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// NewUnavailable builds a server for an endpoint that cannot serve yet (no
// key or store: joule init has not run). It starts, completes the MCP
// handshake and lists the same tools and resources, and answers every tool
// call with an error result and every resource read with an error, each
// saying reason (e.g. "run 'joule init'"): a host shows that, where a
// server that exited at start-up shows only "connection closed".
func NewUnavailable(reason, version string) *Server {
	if version == "" {
		version = "dev"
	}
	s := &Server{cfg: Config{Version: version, Limits: DefaultLimits, Poll: time.Second}}
	s.mcp = server.NewMCPServer("joule", version,
		server.WithTitle("joule: gated workspace tools and verifiable receipts"),
		server.WithInstructions("joule cannot serve: "+reason),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithRecovery(),
		server.WithToolHandlerMiddleware(func(server.ToolHandlerFunc) server.ToolHandlerFunc {
			return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultError("joule cannot serve: " + reason), nil
			}
		}),
	)
	s.addTools()
	fail := func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, errors.New("joule cannot serve: " + reason)
	}
	for _, uri := range []string{URISteward, URISessions, URICheckpoint, URIGrants} {
		s.mcp.AddResource(mcp.NewResource(uri, uri, mcp.WithMIMEType(jsonMIME)), fail)
	}
	for _, uri := range []string{TemplateSessionsPage, TemplateSession, TemplateReceipts, TemplateReceipt, TemplateLogEntry, TemplateGrant} {
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(uri, uri, mcp.WithTemplateMIMEType(jsonMIME)), fail)
	}
	return s
}
