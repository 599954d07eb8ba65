#!/usr/bin/env bash
# The network fault tests (test/faults/network-partition.test.ts and the
# Cluster node partition) drop packets with nftables inside a network
# namespace of their own: they need `nft` (Debian's nftables) and `ip`
# (iproute2), and root. Without them those tests skip, saying why.
#
# When `nft` is missing and this runs as root with apt-get (a Debian or
# Ubuntu container, CI), it says what it will install, then installs it.
# RATECONTRACT_NO_INSTALL=1 never installs anything: it fails, naming what is
# missing. Not root, or no apt-get: it fails with the command to run.
set -euo pipefail

command -v nft >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 && exit 0

missing=()
command -v nft >/dev/null 2>&1 || missing+=(nftables)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
need="ensure-nft: the network fault tests need nft and ip; missing Debian packages: ${missing[*]}."
if [ "${RATECONTRACT_NO_INSTALL:-}" = "1" ]; then
  echo "$need Not installing them (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "$need Install them (Debian/Ubuntu, as root: apt-get install ${missing[*]})." >&2
  exit 1
fi

echo "ensure-nft: installing Debian's packages ${missing[*]} with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
command -v nft >/dev/null 2>&1 || { echo "ensure-nft: nft still missing after apt-get" >&2; exit 1; }
