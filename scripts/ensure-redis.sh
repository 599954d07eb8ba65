#!/usr/bin/env bash
# npm test's pretest. The integration tests start their own redis-server
# processes (standalone, Cluster and Sentinel) on free ports; they need the
# binaries redis-server, redis-cli and redis-sentinel on PATH, not a running
# server.
#
# When one is missing and this runs as root with apt-get (a Debian or Ubuntu
# container, CI), it says which Debian packages it will install, then installs
# only those: redis-server, redis-tools (redis-cli) and redis-sentinel.
# RATECONTRACT_NO_INSTALL=1 never installs anything: it fails, naming what is
# missing. Otherwise (not root, no apt-get) it fails with the command to run.
set -euo pipefail

BINARIES=(redis-server redis-cli redis-sentinel)
# The Debian package of each binary, in the same order.
PACKAGES=(redis-server redis-tools redis-sentinel)

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
need="ensure-redis: the tests need redis-server, redis-cli and redis-sentinel on PATH; missing $(list "${missing[@]}")."

if [ "${RATECONTRACT_NO_INSTALL:-}" = "1" ]; then
  echo "$need Not installing them (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install ${packages[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "$need Install them (Debian/Ubuntu, as root: apt-get install ${packages[*]}), or put them on PATH." >&2
  exit 1
fi

noun=package
[ "${#packages[@]}" -gt 1 ] && noun=packages
echo "ensure-redis: missing $(list "${missing[@]}"); installing Debian's $noun ${packages[*]} with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}"

still=()
for b in "${missing[@]}"; do
  command -v "$b" >/dev/null 2>&1 || still+=("$b")
done
if [ "${#still[@]}" -gt 0 ]; then
  echo "ensure-redis: still missing after apt-get: $(list "${still[@]}")" >&2
  exit 1
fi
