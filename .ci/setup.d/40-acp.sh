#!/usr/bin/env bash
# joule acp (issue 7): gopls, pinned, for TestRenameMatchesGopls (L1 renames
# must be byte-identical to `gopls rename`), and the official TypeScript ACP
# SDK client (acpagent/testdata/tsclient, pinned in its package-lock.json) for
# TestACPTypeScriptClient. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

GOPLS_VERSION=v0.23.0 # the newest gopls that builds with Go 1.26
gobin="$(go env GOBIN)"
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
if [ -x "$gobin/gopls" ] && "$gobin/gopls" version 2>/dev/null | grep -q "gopls $GOPLS_VERSION\$\|gopls $GOPLS_VERSION "; then
  echo "40-acp: gopls $GOPLS_VERSION is installed"
else
  go install "golang.org/x/tools/gopls@$GOPLS_VERSION"
fi
"$gobin/gopls" version

. .ci/setup.d/lib/npm.sh
npm_install 40-acp acpagent/testdata/tsclient
