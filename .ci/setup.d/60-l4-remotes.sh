#!/usr/bin/env bash
# L4 against real remote agents (issue 22): claude-code-acp (the real Claude
# Code through the Agent SDK) and codex-acp (the real Codex, a native
# binary), pinned in tiers/l4/e2e/testdata/package-lock.json, for the
# end-to-end tests in tiers/l4/e2e, and claude-agent-acp (its successor,
# which writes and runs commands with Claude Code's own tools: issue 36).
# Idempotent: npm ci from the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/node.sh
node --version

dir=tiers/l4/e2e/testdata
if [ -f "$dir/node_modules/@zed-industries/claude-code-acp/package.json" ] &&
   [ -f "$dir/node_modules/@zed-industries/codex-acp/package.json" ] &&
   [ -f "$dir/node_modules/@agentclientprotocol/claude-agent-acp/package.json" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "60-l4-remotes: $dir/node_modules is up to date"
  exit 0
fi
npm ci --prefix "$dir" --no-audit --no-fund
