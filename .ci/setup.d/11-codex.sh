#!/usr/bin/env bash
# Codex CLI (issue 18): the pinned @openai/codex, a native binary inside
# the npm package, for plugins/codex/e2e, which runs it offline against a
# fake Responses endpoint. Idempotent: the committed lockfile, installed
# outside the checkout (lib/npm.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
npm_install codex plugins/codex/e2e/testdata
# The test runs in a loopback-only network namespace: unshare (util-linux)
# and ip (iproute2).
if ! command -v unshare >/dev/null 2>&1 || ! command -v ip >/dev/null 2>&1; then
  apt-get update
  apt-get install -y util-linux iproute2
fi
