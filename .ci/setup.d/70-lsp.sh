#!/usr/bin/env bash
# L1 through language servers (issue 19, part 3; gopls, for the Go
# refactorings, is pinned and installed by 40-acp.sh): typescript-language-server
# with typescript, and pyright, pinned in tiers/l1/lsp/testdata/servers
# (package.json + package-lock.json), for the tests of tiers/l1/lsp, which
# drive them for real; installed outside the checkout (lib/npm.sh).
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
npm_install 70-lsp tiers/l1/lsp/testdata/servers
