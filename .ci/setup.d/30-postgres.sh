#!/usr/bin/env bash
# Team store (issue 9): the PostgreSQL server binaries from Debian packages.
# The tests start their own throwaway server from them (initdb into a temp
# directory, run as the postgres user when CI runs as root) and create their
# own role and databases, so nothing is configured or started here; with
# CI=true a missing server fails the PostgreSQL half of the suite instead
# of skipping it. Idempotent, and quick when the server is installed.
set -euo pipefail

for bin in /usr/lib/postgresql/*/bin; do
  if [ -x "$bin/initdb" ] && [ -x "$bin/pg_ctl" ] && [ -x "$bin/pg_dump" ] && [ -x "$bin/pg_restore" ]; then
    echo "postgres: $("$bin/postgres" --version) in $bin"
    exit 0
  fi
done

export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends postgresql postgresql-client
for bin in /usr/lib/postgresql/*/bin; do
  if [ -x "$bin/initdb" ]; then
    echo "postgres: $("$bin/postgres" --version) in $bin"
    exit 0
  fi
done
echo "postgres: installed, but no /usr/lib/postgresql/*/bin/initdb" >&2
exit 1
