#!/usr/bin/env bash
# Renders icon.svg to icon.png (256x256, transparent corners) with Debian's
# chromium, headless; no other tool is needed. Run it after editing the SVG
# and commit both: Open VSX and VS Code show the PNG (vsce refuses an SVG
# icon).
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '<!doctype html><style>html,body{margin:0;background:transparent}</style>%s' "$(cat icon.svg)" > "$tmp/icon.html"
"${CHROMIUM:-chromium}" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$tmp/profile" --default-background-color=00000000 \
  --window-size=256,256 --screenshot="$PWD/icon.png" "file://$tmp/icon.html" 2>/dev/null
file icon.png
