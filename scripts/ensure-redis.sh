#!/usr/bin/env bash
# The integration tests start their own redis-server processes (standalone and
# Cluster) on free ports; they need the binaries, not a running server.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  exit 0
fi
if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  echo "ensure-redis: redis-server not found; installing Debian's redis-server package" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  exit 0
fi
echo "ensure-redis: the tests need redis-server and redis-cli on PATH (Debian/Ubuntu: apt-get install redis-server)" >&2
exit 1
