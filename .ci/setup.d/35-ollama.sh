#!/usr/bin/env bash
# L3 and L2 against a real Ollama (issue 38): the ollama server, built here
# from source (github.com/ollama/ollama at the version pinned by the tool
# module tools/ollama, so none of its dependencies enter joule's go.mod),
# CPU only, with cgo. The tests that use tiers/ollamatest run it on
# tiny models they write themselves, offline (docs/models.md, "Tested
# against a real Ollama").
#
# The module zip lacks llama.cpp's vendor/ headers: nlohmann/json and stb
# come from Debian (nlohmann-json3-dev, libstb-dev), and miniaudio is
# tools/ollama/include/miniaudio/miniaudio.h, a stand-in whose decoder
# calls all fail (audio input is then unsupported).
#
# The binary goes outside the checkout, keyed by version:
#   $JOULE_TEST_CACHE/ollama-<version>/ollama
# (JOULE_TEST_CACHE defaults to ${XDG_CACHE_HOME:-~/.cache}/joule-test,
# /var/cache/joule-test for root;
# JOULE_OLLAMA overrides the binary's path for the tests). Cold, about 12
# CPU-minutes (37 minutes of wall time on a loaded 2-core machine); warm
# (Go's build cache filled), about 26 s; 0.5 s when the binary for this
# version, module graph, stand-in header and flags is there. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
dpkg -s nlohmann-json3-dev >/dev/null 2>&1 || need+=(nlohmann-json3-dev)
dpkg -s libstb-dev >/dev/null 2>&1 || need+=(libstb-dev)
command -v g++ >/dev/null 2>&1 || need+=(g++)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

. .ci/setup.d/lib/npm.sh # joule_test_cache: the cache's one rule in shell
cd tools/ollama
version=$(go list -m -f '{{.Version}}' github.com/ollama/ollama)
cache=$(joule_test_cache)
dir=$cache/ollama-$version
bin=$dir/ollama
ldflags="-s -w -X github.com/ollama/ollama/version.Version=${version#v}"
# What the binary is built from besides the version: the module graph, the
# stand-in header and the flags.
key=$(printf '%s\n' "$ldflags" | cat - go.sum include/miniaudio/miniaudio.h | sha256sum | cut -d' ' -f1)
if [ -x "$bin" ] && [ "$(cat "$dir/build.key" 2>/dev/null)" = "$key" ]; then
  echo "35-ollama: $bin ($version) is built"
  exit 0
fi

mkdir -p "$dir"
start=$(date +%s)
CGO_ENABLED=1 CGO_CPPFLAGS="-I$PWD/include" GOFLAGS=-buildvcs=false \
  go build -trimpath -ldflags "$ldflags" \
  -o "$bin.tmp" github.com/ollama/ollama
mv "$bin.tmp" "$bin"
echo "$key" >"$dir/build.key"
echo "35-ollama: built $bin ($version) in $(( $(date +%s) - start )) s; $("$bin" --version 2>&1 | tail -1 | sed "s/^Warning: //")"
