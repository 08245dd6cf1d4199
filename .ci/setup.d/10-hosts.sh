#!/usr/bin/env bash
# Host adapters (issues 4, 18): the pinned Claude Code, Gemini CLI, OpenCode
# (opencode-ai) and Cline CLIs for the real end-to-end tests, and the
# published OpenCode plugin types + TypeScript that type-check joule's
# OpenCode plugin. Idempotent: npm ci from the committed lockfiles. (Cline
# asks for node >= 22 in its engines field; its CLI is a native binary and
# runs without it.)
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/node.sh
node --version

for dir in plugins/claudecode/e2e plugins/geminicli/e2e plugins/opencode plugins/opencode/e2e/testdata plugins/cline/e2e/testdata; do
  if [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
    echo "hosts: $dir is up to date"
    continue
  fi
  # Claude Code's postinstall links its native binary into bin/; when npm
  # skips install scripts the test finds it in the platform package instead.
  # A CLI whose lockfile names only this platform's native package (the
  # registry here serves no other platform's) fails npm ci's check that
  # every optional dependency is locked; npm install --no-save installs
  # the same locked versions and leaves the lockfile as committed.
  npm ci --prefix "$dir" --no-audit --no-fund ||
    npm install --prefix "$dir" --no-save --no-audit --no-fund
done
