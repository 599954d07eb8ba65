#!/usr/bin/env bash
# The monitoring kit's tests (test/unit/metrics/monitoring-kit.test.ts) check
# deploy/prometheus/alerts.yaml with `promtool check rules` and run its rule
# unit tests with `promtool test rules`: they need promtool, which Debian's
# `prometheus` package provides. Without it those two tests skip, saying so,
# except in the full tier (`RC_TEST_TIER=full`) or on CI (`CI=true`), where a
# missing promtool fails them.
#
# When promtool is missing and this runs as root with apt-get (a Debian or
# Ubuntu container, CI), it says what it will install, then installs it
# (without recommends; the package's service is not started in a container
# without systemd). RATECONTRACT_NO_INSTALL=1 never installs anything: it
# fails, naming what is missing. Not root, or no apt-get: it fails with the
# command to run.
set -euo pipefail

command -v promtool >/dev/null 2>&1 && exit 0

need="ensure-promtool: the monitoring kit's tests need promtool; missing Debian package: prometheus."
if [ "${RATECONTRACT_NO_INSTALL:-}" = "1" ]; then
  echo "$need Not installing it (RATECONTRACT_NO_INSTALL=1). Debian/Ubuntu: apt-get install --no-install-recommends prometheus" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != "0" ]; then
  echo "$need Install it (Debian/Ubuntu, as root: apt-get install --no-install-recommends prometheus)." >&2
  exit 1
fi

echo "ensure-promtool: installing Debian's package prometheus with apt-get (set RATECONTRACT_NO_INSTALL=1 to skip this)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
command -v promtool >/dev/null 2>&1 || { echo "ensure-promtool: promtool still missing after apt-get" >&2; exit 1; }
