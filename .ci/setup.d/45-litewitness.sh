#!/usr/bin/env bash
# The witness elsewhere (issue 34, part 2): torchwood's litewitness and
# witnessctl, pinned, a tlog-witness written by others that the tests of
# core/witness and cmd/joule run as their own process (via
# core/witness/litewitnesstest), and that make bench times a checkpoint's
# round trip against. They are installed into GOPATH/bin, never required
# by joule's go.mod. litewitness keeps its key in an ssh-agent: the tests
# start their own agent with ssh-agent, ssh-add and ssh-keygen
# (openssh-client). Idempotent.
set -euo pipefail

TORCHWOOD_VERSION=v0.6.1
gobin="$(go env GOBIN)"
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"

installed() {
  [ -x "$gobin/$1" ] && go version -m "$gobin/$1" 2>/dev/null | grep -q "filippo.io/torchwood[[:space:]]*$TORCHWOOD_VERSION"
}
if installed litewitness && installed witnessctl; then
  echo "45-litewitness: litewitness and witnessctl $TORCHWOOD_VERSION are installed"
else
  GOFLAGS= go install "filippo.io/torchwood/cmd/litewitness@$TORCHWOOD_VERSION" "filippo.io/torchwood/cmd/witnessctl@$TORCHWOOD_VERSION"
fi

if ! command -v ssh-agent >/dev/null || ! command -v ssh-add >/dev/null || ! command -v ssh-keygen >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends openssh-client
fi
echo "45-litewitness: $(go version -m "$gobin/litewitness" | grep -m1 "mod[[:space:]]*filippo.io/torchwood" | awk "{print \$2, \$3}")"
