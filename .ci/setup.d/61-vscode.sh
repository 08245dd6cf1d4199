#!/usr/bin/env bash
# The VS Code extension (plugins/vscode): typescript, @types/vscode and
# @vscode/vsce, pinned in plugins/vscode/package-lock.json, installed
# outside the checkout (lib/npm.sh). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
npm_install 61-vscode plugins/vscode
