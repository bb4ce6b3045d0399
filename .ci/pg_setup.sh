#!/usr/bin/env bash
# Set up PostgreSQL 15 for the tests (run as root, Debian 12): installs the server and its
# headers (which `sparse-einsum install-kernels` builds the kernels against; BLAS comes
# from PyPI), starts a throwaway cluster on the Unix socket dir /tmp/se-pg (port 5432;
# SE_PG_DIR and SE_PG_PORT choose others) with a database sparse_einsum and a superuser
# role root. Idempotent. Logs go to stderr; the last stdout line is
#     export SE_TEST_PG_DSN=...
# so CI runs: eval "$(bash .ci/pg_setup.sh)", then install-kernels with the package.
set -euo pipefail
exec 3>&1 1>&2                                   # keep stdout for the export line

PGVER=15
PGBIN=/usr/lib/postgresql/$PGVER/bin
DIR=${SE_PG_DIR:-/tmp/se-pg}
PORT=${SE_PG_PORT:-5432}
DB=sparse_einsum

PACKAGES="postgresql-$PGVER postgresql-server-dev-$PGVER make gcc"
if ! dpkg -s $PACKAGES >/dev/null 2>&1; then
    echo "pg_setup: installing $PACKAGES"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $PACKAGES >/dev/null
fi

as_pg() { runuser -u postgres -- "$@"; }
mkdir -p "$DIR"
chown postgres:postgres "$DIR"
if as_pg $PGBIN/pg_ctl -D "$DIR/data" status >/dev/null 2>&1 &&
   ! $PGBIN/pg_isready -q -h "$DIR" -p $PORT; then
    echo "pg_setup: the server in $DIR/data runs but does not answer: stopping it"
    as_pg $PGBIN/pg_ctl -D "$DIR/data" -m fast -w stop >/dev/null || true
fi
if ! as_pg $PGBIN/pg_ctl -D "$DIR/data" status >/dev/null 2>&1; then
    if [ ! -s "$DIR/data/PG_VERSION" ]; then
        echo "pg_setup: initdb $DIR/data"
        as_pg $PGBIN/initdb -D "$DIR/data" -A trust -U postgres -E UTF8 --no-sync >/dev/null
    fi
    echo "pg_setup: starting the server on $DIR port $PORT"
    as_pg $PGBIN/pg_ctl -D "$DIR/data" -w -t 60 -l "$DIR/log" \
        -o "-c listen_addresses='' -k $DIR -p $PORT -c fsync=off" start >/dev/null 3>&-   # the server must not hold our stdout
fi

psql_pg() { as_pg $PGBIN/psql -h "$DIR" -p $PORT -U postgres -v ON_ERROR_STOP=1 -qtA "$@"; }
[ "$(psql_pg -d postgres -c "SELECT 1 FROM pg_roles WHERE rolname = 'root'")" = 1 ] ||
    psql_pg -d postgres -c "CREATE ROLE root SUPERUSER LOGIN"
[ "$(psql_pg -d postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" = 1 ] ||
    psql_pg -d postgres -c "CREATE DATABASE $DB OWNER root"
echo "export SE_TEST_PG_DSN='host=$DIR port=$PORT dbname=$DB user=root'" >&3
