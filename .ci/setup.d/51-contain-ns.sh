#!/usr/bin/env bash
# The namespace construction's attack tests (cmd/joule/contain_ns_test.go,
# issue 14): util-linux's unshare, nsenter and setpriv, mount's mount and
# umount, perl for the raw open_tree system call; bubblewrap, the baseline of
# cmd/joule-exec's BenchmarkVsBwrap (make bench). Idempotent: installs only
# what is missing.
set -euo pipefail

missing=()
for tool in bwrap:bubblewrap unshare:util-linux nsenter:util-linux setpriv:util-linux mount:mount umount:mount perl:perl-base chroot:coreutils; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update
  apt-get install -y "${missing[@]}"
fi
unshare -Urm true || echo "contain-ns: unprivileged user namespaces do not work here; TestContainNamespaceAttacks will fail under CI" >&2
