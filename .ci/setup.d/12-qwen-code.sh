#!/usr/bin/env bash
# Qwen Code (issue 32): the pinned @qwen-code/qwen-code for
# plugins/qwencode/e2e, which runs it offline against a fake
# OpenAI-compatible endpoint. Idempotent: npm ci from the committed
# lockfile, or npm install --no-save of the same locked versions where the
# registry serves only this platform's optional packages. (Its engines
# field asks for node >= 22; 0.24.4 runs its headless mode on node 20.)
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/node.sh

dir=plugins/qwencode/e2e
if [ -d "$dir/node_modules" ] && [ "$dir/node_modules/.package-lock.json" -nt "$dir/package-lock.json" ]; then
  echo "qwen-code: $dir is up to date"
else
  npm ci --prefix "$dir" --no-audit --no-fund ||
    npm install --prefix "$dir" --no-save --no-audit --no-fund
fi
