#!/usr/bin/env bash
# Checks what test/integration/pg needs (docs/pg.md, docs/testing.md): a
# PostgreSQL server answering on 127.0.0.1:${RC_PG_PORT:-5432} with trust
# auth for user ${RC_PG_USER:-postgres} and a database ${RC_PG_DATABASE:-test}
# (this machine's and CI's), and the server's initdb and pg_ctl (the restart
# test runs a private server of its own, as the postgres user when root).
# It installs nothing: it fails, saying what is missing and how to provide it.
set -euo pipefail

PORT="${RC_PG_PORT:-5432}"
USER_NAME="${RC_PG_USER:-postgres}"
DB="${RC_PG_DATABASE:-test}"

initdb=""
for d in /usr/lib/postgresql/17/bin /usr/lib/postgresql/16/bin /usr/lib/postgresql/15/bin; do
  if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then initdb="$d/initdb"; break; fi
done
if [ -z "$initdb" ]; then
  echo "ensure-postgres: initdb and pg_ctl not found under /usr/lib/postgresql/{15,16,17}/bin: the PostgreSQL server package is needed (Debian/Ubuntu: apt-get install postgresql)." >&2
  exit 1
fi
if [ "$(id -u)" = "0" ] && ! id postgres >/dev/null 2>&1; then
  echo "ensure-postgres: running as root, the restart test runs initdb as the postgres user, which does not exist (the postgresql package creates it)." >&2
  exit 1
fi
if ! command -v pg_isready >/dev/null 2>&1; then
  echo "ensure-postgres: pg_isready not found (Debian/Ubuntu: apt-get install postgresql-client)." >&2
  exit 1
fi
if ! pg_isready -q -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d "$DB" -t 5; then
  echo "ensure-postgres: no PostgreSQL answers on 127.0.0.1:$PORT (user $USER_NAME, database $DB). The tests need one with trust auth for 127.0.0.1 and a database $DB (RC_PG_PORT, RC_PG_USER, RC_PG_DATABASE to use another)." >&2
  exit 1
fi
if command -v psql >/dev/null 2>&1 && ! psql -X -q -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d "$DB" -w -c 'SELECT 1' >/dev/null 2>&1; then
  echo "ensure-postgres: PostgreSQL on 127.0.0.1:$PORT refused user $USER_NAME on database $DB without a password: the tests need trust auth for 127.0.0.1 and the database to exist." >&2
  exit 1
fi
