#!/usr/bin/env bash
# systemd-analyze, which checks the units 'joule install --system' writes
# as systemd itself parses them (cmd/joule TestSystemUnitsVerify); no
# systemd needs to run. Idempotent: installs only when it is missing.
set -euo pipefail

if ! command -v systemd-analyze >/dev/null 2>&1; then
  apt-get update
  apt-get install -y --no-install-recommends systemd
fi
