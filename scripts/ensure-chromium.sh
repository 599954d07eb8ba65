#!/usr/bin/env bash
# The admin page's browser test drives Debian's chromium through playwright-core
# (which downloads no browser of its own): it needs /usr/bin/chromium.
#
# When it is missing and this runs as root with apt-get (a Debian or Ubuntu
# container, CI), it says that it will install Debian's chromium package, then
# installs it. RATECONTRACT_NO_INSTALL=1 never installs anything: it fails,
# naming what is missing. Otherwise (not root, no apt-get) it fails with the
# command to run. RATECONTRACT_CHROMIUM overrides the path checked (for this
# script's own test; the browser test itself looks at /usr/bin/chromium).
set -euo pipefail

CHROMIUM="${RATECONTRACT_CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0

need="ensure-chromium: the browser test needs $CHROMIUM; it is missing."
if [ "${RATECONTRACT_NO_INSTALL:-}" = "1" ]; then
  echo "$need Not installing it (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install chromium" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "$need Install it (Debian/Ubuntu, as root: apt-get install chromium)." >&2
  exit 1
fi

echo "ensure-chromium: missing $CHROMIUM; installing Debian's package chromium with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-chromium: still missing after apt-get: $CHROMIUM" >&2
  exit 1
fi
