#!/usr/bin/env bash
# Qwen Code (issue 32): the pinned @qwen-code/qwen-code for
# plugins/qwencode/e2e, which runs it offline against a fake
# OpenAI-compatible endpoint. Idempotent: the committed lockfile,
# installed outside the checkout (lib/npm.sh). (Its engines field asks for
# node >= 22; 0.24.4 runs its headless mode on node 20.)
set -euo pipefail
cd "$(dirname "$0")/../.."

. .ci/setup.d/lib/npm.sh
npm_install qwen-code plugins/qwencode/e2e
