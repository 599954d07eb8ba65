#!/usr/bin/env bash
# The Valkey pass of the Redis suite (`npm run test:valkey`, run by .ci/run):
# the same test files with RC_REDIS_IMPL=valkey start valkey-server and use
# valkey-cli instead of redis-server and redis-cli. This makes sure both are
# on PATH.
#
# When one is missing and this runs as root with apt-get, it says what it will
# do, then installs Debian's packages valkey-server and valkey-tools
# (valkey-cli). On Debian bookworm, whose own archive has no Valkey, they come
# from bookworm-backports (Valkey 8), which it adds to apt's sources first if
# no source names it. RATECONTRACT_NO_INSTALL=1 never installs anything: it
# fails, naming what is missing. Otherwise (not root, no apt-get) it fails
# with the command to run.
set -euo pipefail

BINARIES=(valkey-server valkey-cli)
# The Debian package of each binary, in the same order.
PACKAGES=(valkey-server valkey-tools)
SOURCES_DIR="${RATECONTRACT_APT_SOURCES_DIR:-/etc/apt/sources.list.d}"
SOURCES_LIST="${RATECONTRACT_APT_SOURCES_LIST:-/etc/apt/sources.list}"
OS_RELEASE="${RATECONTRACT_OS_RELEASE:-/etc/os-release}"
BACKPORTS_LINE='deb http://deb.debian.org/debian bookworm-backports main'

missing=()
packages=()
for i in "${!BINARIES[@]}"; do
  if ! command -v "${BINARIES[$i]}" >/dev/null 2>&1; then
    missing+=("${BINARIES[$i]}")
    packages+=("${PACKAGES[$i]}")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

list() { local IFS=','; local joined="$*"; echo "${joined//,/, }"; }
need="ensure-valkey: the Valkey pass needs valkey-server and valkey-cli on PATH; missing $(list "${missing[@]}")."

codename=''
if [ -r "$OS_RELEASE" ]; then
  codename="$(. "$OS_RELEASE" && echo "${VERSION_CODENAME:-}")"
fi
target=()
how="apt-get install ${packages[*]}"
if [ "$codename" = bookworm ]; then
  target=(-t bookworm-backports)
  how="add '$BACKPORTS_LINE' to $SOURCES_DIR, apt-get update, apt-get install -t bookworm-backports ${packages[*]}"
fi

if [ "${RATECONTRACT_NO_INSTALL:-}" = "1" ]; then
  echo "$need Not installing them (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: $how" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "$need Install them (Debian/Ubuntu, as root: $how), or put them on PATH." >&2
  exit 1
fi

# Whether any apt source already names bookworm-backports (bash only: no grep needed).
has_backports() {
  local f
  for f in "$SOURCES_DIR"/* "$SOURCES_LIST"; do
    [ -f "$f" ] || continue
    [[ "$(<"$f")" == *bookworm-backports* ]] && return 0
  done
  return 1
}

if [ "$codename" = bookworm ] && ! has_backports; then
  echo "ensure-valkey: Debian bookworm ships Valkey in bookworm-backports; adding '$BACKPORTS_LINE' as $SOURCES_DIR/bookworm-backports.list" >&2
  echo "$BACKPORTS_LINE" > "$SOURCES_DIR/bookworm-backports.list"
fi
noun=package
[ "${#packages[@]}" -gt 1 ] && noun=packages
echo "ensure-valkey: missing $(list "${missing[@]}"); installing Debian's $noun ${packages[*]} with apt-get${target[*]:+ ${target[*]}} (set RATECONTRACT_NO_INSTALL=1 to skip this)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${target[@]}" "${packages[@]}"

still=()
for b in "${missing[@]}"; do
  command -v "$b" >/dev/null 2>&1 || still+=("$b")
done
if [ "${#still[@]}" -gt 0 ]; then
  echo "ensure-valkey: still missing after apt-get: $(list "${still[@]}")" >&2
  exit 1
fi
