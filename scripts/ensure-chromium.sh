#!/usr/bin/env bash
# The admin page's browser test drives Debian's chromium through playwright-core
# (which downloads no browser of its own): it needs /usr/bin/chromium.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "ensure-chromium: /usr/bin/chromium not found; installing Debian's chromium package" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  exit 0
fi
echo "ensure-chromium: the browser test needs /usr/bin/chromium (Debian/Ubuntu: apt-get install chromium)" >&2
exit 1
