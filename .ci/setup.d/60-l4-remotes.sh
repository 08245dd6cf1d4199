#!/usr/bin/env bash
# L4 against real remote agents (issue 22): claude-code-acp (the real Claude
# Code through the Agent SDK) and codex-acp (the real Codex, a native
# binary), pinned in tiers/l4/e2e/testdata/package-lock.json, for the
# end-to-end tests in tiers/l4/e2e, and claude-agent-acp (its successor,
# which writes and runs commands with Claude Code's own tools: issue 36).
# Idempotent: the lockfile, installed outside the checkout (lib/npm.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
npm_install 60-l4-remotes tiers/l4/e2e/testdata
