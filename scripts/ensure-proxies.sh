#!/usr/bin/env bash
# The decide tests (test/integration/decide) run ratecontract decide behind
# real proxies: Debian's nginx (with its auth_request module) and Caddy, and
# HAProxy (built with Lua). Without them those tests skip, saying why, except
# on CI (CI=true), where a missing proxy fails them.
#
# When one is missing and this runs as root with apt-get (a Debian or Ubuntu
# container, CI), it says what it will install, then installs it.
# RATECONTRACT_NO_INSTALL=1 never installs anything: it fails, naming what is
# missing. Not root, or no apt-get: it fails with the command to run.
set -euo pipefail

missing=()
[ -x /usr/sbin/nginx ] || missing+=(nginx)
[ -x /usr/bin/caddy ] || missing+=(caddy)
[ -x /usr/sbin/haproxy ] || missing+=(haproxy)
[ ${#missing[@]} -eq 0 ] && exit 0

need="ensure-proxies: the decide tests need nginx, Caddy and HAProxy; missing Debian packages: ${missing[*]}."
if [ "${RATECONTRACT_NO_INSTALL:-}" = "1" ]; then
  echo "$need Not installing them (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "$need Install them (Debian/Ubuntu, as root: apt-get install ${missing[*]})." >&2
  exit 1
fi

echo "ensure-proxies: installing Debian's packages ${missing[*]} with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)" >&2
apt-get update -qq
# The packages' services are not started: the tests run their own instances.
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
for b in /usr/sbin/nginx /usr/bin/caddy /usr/sbin/haproxy; do
  [ -x "$b" ] || { echo "ensure-proxies: $b still missing after apt-get" >&2; exit 1; }
done
