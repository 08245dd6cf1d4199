# Sourced by the setup scripts that install npm packages (not run on its own:
# make deps runs only .ci/setup.d/*.sh): Debian's nodejs and npm, when the
# machine has no node or npm yet.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq nodejs npm
fi
