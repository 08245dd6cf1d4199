#!/usr/bin/env bash
# The VS Code extension (plugins/vscode): typescript, @types/vscode and
# @vscode/vsce, pinned in plugins/vscode/package-lock.json. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/node.sh
dir=plugins/vscode
if [ -f "$dir/node_modules/@vscode/vsce/package.json" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "61-vscode: $dir/node_modules is up to date"
  exit 0
fi
npm ci --prefix "$dir" --no-audit --no-fund
