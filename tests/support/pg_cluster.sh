#!/usr/bin/env bash
# pg_cluster.sh start|stop|url DIR: a throwaway PostgreSQL cluster for the test suite, on a Unix
# socket in DIR (no TCP port), from Debian's server package (no Docker). `start` is idempotent
# and safe to run from several processes at once (flock); as root the server runs as `postgres`,
# since PostgreSQL refuses to run as root. The tests each create their own database in it.
set -euo pipefail
cmd="$1"
dir="$2"
port=5432

bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "pg_cluster.sh: no PostgreSQL server found under /usr/lib/postgresql; install Debian's postgresql package (bash .ci/deps)" >&2
  exit 1
fi

as_owner() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

case "$cmd" in
  url)
    echo "postgresql:///postgres?host=$dir&port=$port&user=postgres"
    ;;
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      chown postgres: "$dir"
      chmod a+x "$(dirname "$dir")"  # a test's private 0700 temp folder: let `postgres` in
    fi
    exec 9>"$dir/.lock"
    flock 9
    if as_owner "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      exit 0
    fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
      rm -rf "$dir/data"
      as_owner "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    # 9>&-: the server must not inherit the lock, or it would hold it for its whole life.
    # fsync off: a test cluster need not survive an OS crash (a server crash or `pg_ctl stop -m
    # immediate`, which the fault tests use, loses nothing committed either way).
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-p $port -k $dir -c listen_addresses= -c fsync=off -c max_connections=200" start >/dev/null 9>&- ||
      { tail -20 "$dir/server.log" >&2; exit 1; }
    ;;
  stop)
    if [ -d "$dir/data" ]; then
      as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_cluster.sh start|stop|url DIR" >&2
    exit 2
    ;;
esac
