#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite, on a Unix socket (no TCP port), from Debian's
# server package (no Docker). As root the server runs as `postgres`, since PostgreSQL refuses to
# run as root. The tests each create their own database in it.
#   pg_cluster.sh start DIR          start a cluster in DIR (idempotent)
#   pg_cluster.sh stop DIR           stop it and remove DIR
#   pg_cluster.sh start-shared BUILD the build tree's shared cluster: started once in a fresh
#                                    /tmp folder (a socket path must stay under 108 bytes), whose
#                                    path is kept in BUILD/pg-test-dir (flock: safe from several
#                                    test processes at once)
#   pg_cluster.sh stop-shared BUILD  stop it
set -euo pipefail
cmd="$1"
where="$2"
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

running() {
  [ -d "$1/data" ] && as_owner "$bindir/pg_ctl" -D "$1/data" status >/dev/null 2>&1
}

start() {
  local dir="$1"
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$dir"
    chmod a+x "$(dirname "$dir")"  # a test's private 0700 temp folder: let `postgres` in
  fi
  if running "$dir"; then
    return 0
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    rm -rf "$dir/data"
    as_owner "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  # 9>&-: the server must not inherit a lock the caller holds, or it would hold it for its life.
  # fsync off: a test cluster need not survive an OS crash (a server crash or `pg_ctl stop -m
  # immediate`, which the fault tests use, loses nothing committed either way).
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses= -c fsync=off -c max_connections=300" start >/dev/null 9>&- ||
    { tail -20 "$dir/server.log" >&2; exit 1; }
}

stop() {
  local dir="$1"
  if [ -d "$dir/data" ]; then
    as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "$cmd" in
  start) start "$where" ;;
  stop) stop "$where" ;;
  start-shared)
    mkdir -p "$where"
    exec 9>"$where/pg-test.lock"
    flock 9
    dir="$(cat "$where/pg-test-dir" 2>/dev/null || true)"
    if [ -z "$dir" ] || ! running "$dir"; then
      [ -n "$dir" ] && stop "$dir"
      dir="$(mktemp -d /tmp/oe-pgtest-XXXXXX)"
      start "$dir"
      echo "$dir" >"$where/pg-test-dir"
    fi
    ;;
  stop-shared)
    mkdir -p "$where"
    exec 9>"$where/pg-test.lock"
    flock 9
    dir="$(cat "$where/pg-test-dir" 2>/dev/null || true)"
    if [ -n "$dir" ]; then stop "$dir"; fi
    rm -f "$where/pg-test-dir"
    ;;
  *)
    echo "usage: pg_cluster.sh start|stop DIR | start-shared|stop-shared BUILD_DIR" >&2
    exit 2
    ;;
esac
