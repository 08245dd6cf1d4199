#!/usr/bin/env bash
# joule ui: the browser tests in ui/e2e drive Debian's chromium with
# playwright-core (pinned in ui/e2e/testdata/browser/package-lock.json).
# No browser is downloaded by npm: playwright-core never fetches one.
# Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
{ command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; } || need+=(nodejs npm)
dpkg -s fonts-dejavu-core >/dev/null 2>&1 || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
chromium --version 2>/dev/null

. .ci/setup.d/lib/npm.sh
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_install 60-ui-browser ui/e2e/testdata/browser
