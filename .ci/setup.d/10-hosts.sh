#!/usr/bin/env bash
# Host adapters (issues 4, 18): the pinned Claude Code, Gemini CLI, OpenCode
# (opencode-ai) and Cline CLIs for the real end-to-end tests, and the
# published OpenCode plugin types + TypeScript that type-check joule's
# OpenCode plugin. Idempotent: the committed lockfiles, installed outside
# the checkout (lib/npm.sh). (Cline asks for node >= 22 in its engines
# field; its CLI is a native binary and runs without it.)
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh

# Claude Code's postinstall links its native binary into bin/; when npm
# skips install scripts the test finds it in the platform package instead.
for dir in plugins/claudecode/e2e plugins/geminicli/e2e plugins/opencode plugins/opencode/e2e/testdata plugins/cline/e2e/testdata; do
  npm_install hosts "$dir"
done
