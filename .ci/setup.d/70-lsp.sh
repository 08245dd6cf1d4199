#!/usr/bin/env bash
# L1 through language servers (issue 19, part 3; gopls, for the Go
# refactorings, is pinned and installed by 40-acp.sh): typescript-language-server
# with typescript, and pyright, pinned in tiers/l1/lsp/testdata/servers
# (package.json + package-lock.json), for the tests of tiers/l1/lsp, which
# drive them for real. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/node.sh
node --version

dir=tiers/l1/lsp/testdata/servers
if [ -x "$dir/node_modules/.bin/typescript-language-server" ] && [ -x "$dir/node_modules/.bin/pyright-langserver" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "70-lsp: $dir/node_modules is up to date"
  exit 0
fi
npm ci --prefix "$dir" --no-audit --no-fund
