#!/usr/bin/env bash
# The integration tests start their own redis-server processes (standalone,
# Cluster and Sentinel) on free ports; they need the binaries (redis-server,
# redis-cli, redis-sentinel), not a running server.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && command -v redis-sentinel >/dev/null 2>&1; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "ensure-redis: installing Debian's redis-server and redis-sentinel packages" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-sentinel >/dev/null
  exit 0
fi
echo "ensure-redis: the tests need redis-server, redis-cli and redis-sentinel on PATH (Debian/Ubuntu: apt-get install redis-server redis-sentinel)" >&2
exit 1
