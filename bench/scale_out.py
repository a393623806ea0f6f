#!/usr/bin/env python3
"""Scale-out benchmark (issue 15, docs/scale-out.md): `oe run --store URL --workers` with 1, 2
and 4 `oe worker` processes on this machine.

  scale_out.py --build build/release [--nodes 1000] [--sleep-ms 200] [--concurrency 25]
               [--workers 1,2,4] [--repeat 1] [--no-listen] [--cheap] [--tool native|exe]

Starts a private PostgreSQL cluster (tests/support/pg_cluster.sh) on a Unix socket, generates a
fan-out of --nodes independent tool nodes whose tool waits --sleep-ms (I/O-bound: the native
bench tool's nanosleep, or with --tool exe a shell script's `sleep`: two processes per node), and
times the whole coordinator process for each worker count (after a short warm-up run from the same
folder, which makes each worker load the folder's plugins, as a long-lived worker has), every worker holding --concurrency
slots, each configuration in a fresh database. Prints the wall time table and the speed-up over
one worker (the issue asks >= 3.5x from 1 to 4 workers); the ideal is
nodes * sleep / (workers * concurrency).

--cheap adds the per-node overhead of cheap nodes (a tool that answers at once): the plain
SQLite run against the run with one worker, wall / nodes.
--no-listen: workers poll with backoff only (no LISTEN/NOTIFY), to compare the wake-ups.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CLUSTER = os.path.join(ROOT, "tests", "support", "pg_cluster.sh")


def write_experience(d, nodes, sleep_ms, tool, native_lib):
    tools = os.path.join(d, "tools")
    os.makedirs(tools, exist_ok=True)
    if tool == "native":
        # In-process: the wait costs no CPU, so the figure is the queue's, not process spawns'.
        impl = "./tools/wait.so"
        shutil.copy(native_lib, os.path.join(tools, "wait.so"))
    else:
        impl = "./tools/wait.sh"  # a process per node (two, with sleep): the CPU adds up
        with open(os.path.join(tools, "wait.sh"), "w") as f:
            f.write("#!/bin/sh\ncat >/dev/null\n")
            if sleep_ms > 0:
                f.write("sleep %s\n" % (sleep_ms / 1000.0))
            f.write("echo '{\"state_delta\":{\"f\":1}}'\n")
        os.chmod(os.path.join(tools, "wait.sh"), 0o755)
    lines = ["name: scale-bench", "version: 0.1.0", "state:", "  schema:",
             "    f: { type: number }", "graph:", "  nodes:"]
    for i in range(nodes):
        lines.append("    - { id: n%d, kind: tool, impl: %s, writes: [f], args: { out: f, i: %d, "
                     "sleep_ms: %d } }" % (i, impl, i, sleep_ms))
    lines.append("  edges: []")
    with open(os.path.join(d, "experience.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_warm_up(path, nodes, native_lib):
    impl = "./tools/wait.so" if native_lib else "./tools/wait.sh"
    lines = ["name: scale-bench-warm-up", "version: 0.1.0", "state:", "  schema:",
             "    f: { type: number }", "graph:", "  nodes:"]
    for i in range(nodes):
        lines.append("    - { id: w%d, kind: tool, impl: %s, writes: [f], args: { out: f, i: %d, "
                     "sleep_ms: 20 } }" % (i, impl, i))
    lines.append("  edges: []")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def psql(bindir, url, sql):
    subprocess.check_call([os.path.join(bindir, "psql"), "-q", "-X", url, "-c", sql],
                          stdout=subprocess.DEVNULL)


def timed(cmd, env):
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), proc.stderr.decode(errors="replace")[-2000:]))
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--sleep-ms", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=25)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-listen", action="store_true")
    ap.add_argument("--cheap", action="store_true")
    ap.add_argument("--tool", choices=["native", "exe"], default="native")
    args = ap.parse_args()
    oe = os.path.join(os.path.abspath(args.build), "bin", "oe")
    native_lib = os.path.join(os.path.abspath(args.build), "bench", "bench_native_tool.so")
    if args.tool == "native" and not os.path.exists(native_lib):
        sys.exit("build the benchmark's tool first: cmake --build --preset release "
                 "--target bench_native_tool")
    bindir = sorted(d for d in (os.path.join("/usr/lib/postgresql", v, "bin")
                                for v in os.listdir("/usr/lib/postgresql")))[-1]
    env = dict(os.environ, OE_PLUGIN_PATH="")

    tmp = tempfile.mkdtemp(prefix="oe-scale-")
    os.chmod(tmp, 0o755)
    pg_dir = os.path.join(tmp, "pg")
    subprocess.check_call(["bash", CLUSTER, "start", pg_dir], stdout=subprocess.DEVNULL)
    admin = "postgresql:///postgres?host=%s&port=5432&user=postgres" % pg_dir
    db_count = [0]

    def fresh_db():
        db_count[0] += 1
        name = "bench_%d" % db_count[0]
        psql(bindir, admin, "CREATE DATABASE %s" % name)
        return "postgresql:///%s?host=%s&port=5432&user=postgres" % (name, pg_dir)

    def with_workers(exp, k, concurrency):
        url = fresh_db()
        workers = []
        for i in range(k):
            cmd = [oe, "worker", "--store", url, "--concurrency", str(concurrency),
                   "--id", "bench-%d" % i]
            if args.no_listen:
                cmd.append("--no-listen")
            workers.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL))
        try:
            # Warm-up: each worker loads the folder's plugins on its first attempt from it, once
            # in its life; a short run of the same folder pays that before the clock starts.
            warm = os.path.join(exp, "warm.yaml")
            write_warm_up(warm, 2 * k * concurrency, native_lib if args.tool == "native" else None)
            timed([oe, "run", warm, "-q", "--no-cache", "--store", url, "--workers",
                   "--concurrency", str(2 * k * concurrency)], env)
            return timed([oe, "run", exp, "-q", "--fresh", "--no-cache", "--store", url,
                          "--workers", "--concurrency", str(max(1000, k * concurrency))], env)
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            for w in workers:
                w.wait()

    try:
        exp = os.path.join(tmp, "exp")
        write_experience(exp, args.nodes, args.sleep_ms, args.tool, native_lib)
        subprocess.run([oe, "validate", exp], env=env, check=True, stdout=subprocess.DEVNULL)
        counts = [int(k) for k in args.workers.split(",")]
        ideal = args.nodes * args.sleep_ms / 1000.0
        print("%d nodes (%s tool), each waiting %d ms; %d slots per worker; wake-ups: %s"
              % (args.nodes, args.tool, args.sleep_ms, args.concurrency,
                 "polling only" if args.no_listen else "LISTEN/NOTIFY + polling"))
        print("%-8s %10s %10s %10s" % ("workers", "wall s", "ideal s", "speed-up"))
        base = None
        for k in counts:
            walls = [with_workers(exp, k, args.concurrency) for _ in range(args.repeat)]
            wall = statistics.median(walls)
            base = base or wall * counts[0]
            print("%-8d %10.2f %10.2f %9.2fx" % (k, wall, ideal / (k * args.concurrency),
                                                  base / wall))
            sys.stdout.flush()
        if args.cheap:
            cheap = os.path.join(tmp, "cheap")
            write_experience(cheap, args.nodes, 0, args.tool, native_lib)
            subprocess.run([oe, "validate", cheap], env=env, check=True, stdout=subprocess.DEVNULL)
            plain = statistics.median(
                timed([oe, "run", cheap, "-q", "--fresh", "--no-cache", "--concurrency",
                       str(args.concurrency)], env) for _ in range(max(1, args.repeat)))
            remote = statistics.median(
                with_workers(cheap, 1, args.concurrency) for _ in range(max(1, args.repeat)))
            print("cheap nodes (%d, a %s tool answering at once), wall per node:"
                  % (args.nodes, args.tool))
            print("  SQLite, local pool (--concurrency %d)  %8.0f us" % (args.concurrency,
                                                                        plain / args.nodes * 1e6))
            print("  --workers, 1 worker x %d slots       %8.0f us" % (args.concurrency,
                                                                        remote / args.nodes * 1e6))
    finally:
        subprocess.call(["bash", CLUSTER, "stop", pg_dir], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
