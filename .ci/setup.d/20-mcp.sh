#!/usr/bin/env bash
# joule mcp: the TypeScript MCP SDK client that TestMCPTypeScriptClient
# drives the server with (@modelcontextprotocol/sdk, pinned in
# mcpserver/testdata/tsclient/package-lock.json). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/node.sh
node --version

dir=mcpserver/testdata/tsclient
if [ -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "20-mcp: $dir/node_modules is up to date"
  exit 0
fi
npm ci --prefix "$dir" --no-audit --no-fund
