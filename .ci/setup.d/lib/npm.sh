# Sourced by the setup scripts that install npm packages (not run on its
# own). The packages a test drives are pinned by a package.json and
# package-lock.json in the checkout and installed outside it, in a cache
# shared by every checkout of the same lockfile: $JOULE_TEST_CACHE, else
# $XDG_CACHE_HOME/joule-test, else /var/cache/joule-test for root, else
# ~/.cache/joule-test, under
# npm/<directory in the checkout>/<digest of its two files>. The tests find
# them there through internal/testdeps, which computes the same place
# (its TestShellAgrees runs npm_dir below).

JOULE_SETUP_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

joule_test_cache() {
  if [ -n "${JOULE_TEST_CACHE:-}" ]; then
    echo "$JOULE_TEST_CACHE"
  elif [ -n "${XDG_CACHE_HOME:-}" ]; then
    echo "$XDG_CACHE_HOME/joule-test"
  elif [ "$(id -u)" = 0 ]; then
    # root's home is closed to the users the system-mode tests add and run
    # the host CLIs as (internal/testdeps.RootCache)
    echo /var/cache/joule-test
  else
    echo "$HOME/.cache/joule-test"
  fi
}

# npm_dir DIR: the cache directory whose node_modules holds DIR's packages.
npm_dir() {
  local sum
  sum=$(cat "$1/package.json" "$1/package-lock.json" | sha256sum | cut -c1-16)
  echo "$(joule_test_cache)/npm/$1/$sum"
}

# npm_install LABEL DIR [npm flags...]: installs the packages DIR's
# lockfile pins into npm_dir DIR, unless a whole install is there already
# (a second run costs a stat). Quiet: npm's output goes to a log beside the
# install and is shown only when the install fails. npm ci refuses a
# lockfile that names only this platform's native optional package (the
# registry serves no other): npm install of the same locked versions
# follows, in the cache's copy, so the checkout's lockfile is left as
# committed. Sets NPM_DIR.
npm_install() {
  local label=$1 src=$2
  shift 2
  . "$JOULE_SETUP_LIB/node.sh"
  NPM_DIR=$(npm_dir "$src")
  if [ -f "$NPM_DIR/.joule-installed" ]; then
    echo "$label: $src is up to date ($NPM_DIR)"
    return 0
  fi
  rm -rf "$NPM_DIR"
  mkdir -p "$NPM_DIR"
  cp "$src/package.json" "$src/package-lock.json" "$NPM_DIR/"
  local log="$NPM_DIR.log" start=$SECONDS
  if ! npm ci --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "$@" >"$log" 2>&1; then
    if ! npm install --prefix "$NPM_DIR" --no-audit --no-fund --loglevel=error "$@" >>"$log" 2>&1; then
      echo "$label: npm could not install $src; its log ($log):" >&2
      tail -n 40 "$log" >&2
      return 1
    fi
    echo "$label: npm ci refused $src/package-lock.json (it locks only this platform's native package); npm install of the same versions did it"
  fi
  touch "$NPM_DIR/.joule-installed"
  echo "$label: $src installed in $((SECONDS - start)) s ($(du -sh "$NPM_DIR" | cut -f1), $NPM_DIR)"
}
