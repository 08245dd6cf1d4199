#!/usr/bin/env bash
# joule mcp: the TypeScript MCP SDK client that TestMCPTypeScriptClient
# drives the server with (@modelcontextprotocol/sdk, pinned in
# mcpserver/testdata/tsclient/package-lock.json), installed outside the
# checkout (lib/npm.sh). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
npm_install 20-mcp mcpserver/testdata/tsclient
