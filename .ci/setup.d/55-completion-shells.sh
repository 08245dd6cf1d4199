#!/usr/bin/env bash
# zsh and fish for TestCompletionShells (cmd/joule): the completion scripts
# joule completion zsh|fish prints are loaded and run by the real shells.
# Idempotent.
set -euo pipefail
missing=()
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
command -v fish >/dev/null 2>&1 || missing+=(fish)
if [ ${#missing[@]} -eq 0 ]; then
  echo "completion shells: zsh and fish are installed"
  exit 0
fi
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
zsh --version
fish --version
