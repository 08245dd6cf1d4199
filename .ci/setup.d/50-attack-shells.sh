#!/usr/bin/env bash
# The gate's attack table (core/gate/testdata/attacks, issue 14) runs every
# payload for real: bash 5, dash as /bin/sh, git, make, util-linux's
# setpriv/unshare/runuser and login's su and sg. Node and npm come from
# 10-hosts.sh. Idempotent: installs only what is missing.
set -euo pipefail

missing=()
for tool in bash:bash dash:dash git:git make:make setpriv:util-linux su:login sg:login; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update
  apt-get install -y "${missing[@]}"
fi
bash --version | head -1
