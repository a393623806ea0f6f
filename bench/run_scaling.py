#!/usr/bin/env python3
"""Whole-run scaling benchmark: generates experiences (gen_experience.py) and times `oe run`.

  run_scaling.py --build build/release [--nodes 100,1000,10000,100000]
                 [--shapes chain,fanout,random] [--flavours native,exe,mjs] [--repeat 3]

Per (flavour, shape, N) it times the whole `oe run -q` process twice on one folder, `--repeat`
times (fresh folder each time), and prints the medians:

  first   the first run of a new experience.yaml: YAML parse and validation included, cold state
          and cache;
  rerun   the same experience.yaml run again after deleting its state, cache and logs (so every
          node executes again), which reuses the spec snapshot the first run saved
          (.openexpertise/<file>.spec-snapshot) instead of parsing the YAML;

wall / N for both (the per-node cost including the tool), the re-run's CPU time (user + sys of
oe and its children) / N, which a busy machine inflates far less than the wall time, the peak
RSS of the re-run and its growth per node over a 3-node run of the same flavour (the process's
fixed base).

  --policy      every experience confines its tools (gen_experience.py --policy): what a
                policy costs per node (oe-sandbox per process for exe and mjs tools).
  --plugin-isolation
                the native flavour's `tool` plugin runs in a helper process (docs/trust.md,
                "Process isolation"): a copy of it in each experience's plugins/ takes the kind
                (plugins.override), is trusted in a throwaway trust store, and every run gets
                OE_PLUGIN_ISOLATION=process. What isolation costs per node, to compare with a
                run without the flag (the same copy, in-process: --plugin-isolation-baseline).
  --store URL   runs with `--store URL` (state, cache, events and run records in PostgreSQL,
                docs/storage.md); `--store pg` starts a throwaway cluster with
                tests/support/pg_cluster.sh. Between the two runs the scope's rows and the
                cache are deleted as the SQLite files are. The server's own CPU is not in cpu_us
                (it is another process tree): compare the wall times too.
"""
import argparse
import glob
import resource
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


STORE = None  # --store URL, else None (SQLite)


ISOLATION = None  # --plugin-isolation[-baseline]: "process" or "in-process"
TRUST_FILE = None  # the throwaway trust store of the copied tool plugin


def run_once(oe, exp_dir):
    start = time.perf_counter()
    args = [oe, "run", exp_dir, "-q"] + (["--store", STORE] if STORE else [])
    # Each folder is its own scope, so that runs never meet in the database.
    env = dict(os.environ, OE_STORE_SCOPE=exp_dir)
    if ISOLATION:
        env.update(OE_PLUGIN_ISOLATION=ISOLATION, OE_TRUST_FILE=TRUST_FILE)
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("oe run failed in %s:\n%s" % (exp_dir, err[-2000:]))
    return wall, rusage.ru_maxrss * 1024, rusage.ru_utime + rusage.ru_stime


def forget_run(exp_dir):
    """Deletes what a run left (state, cache, logs) but keeps the spec snapshot."""
    ws = os.path.join(exp_dir, ".openexpertise")
    for path in glob.glob(os.path.join(ws, "state.sqlite*")):
        os.remove(path)
    shutil.rmtree(os.path.join(ws, "cache"), ignore_errors=True)
    shutil.rmtree(os.path.join(ws, "runs"), ignore_errors=True)
    if STORE:
        subprocess.check_call(
            [psql(), STORE, "-q", "-v", "ON_ERROR_STOP=1", "-c",
             "TRUNCATE oe_cache, oe_events, oe_runs, oe_state_snapshot, oe_state_history, "
             "oe_landed_writes"], stdout=subprocess.DEVNULL)


def psql():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql")) or [shutil.which("psql")]
    return found[-1]


def start_cluster():
    """A throwaway cluster (tests/support/pg_cluster.sh) on a Unix socket; returns (url, stop)."""
    script = os.path.join(HERE, "..", "tests", "support", "pg_cluster.sh")
    d = tempfile.mkdtemp(prefix="oe-bench-pg-")
    os.chmod(d, 0o755)
    subprocess.check_call(["bash", script, "start", os.path.join(d, "pg")],
                          stdout=subprocess.DEVNULL)
    url = subprocess.check_output(["bash", script, "url", os.path.join(d, "pg")]).decode().strip()
    return url, lambda: (subprocess.call(["bash", script, "stop", os.path.join(d, "pg")],
                                         stdout=subprocess.DEVNULL),
                         shutil.rmtree(d, ignore_errors=True))


POLICY = False  # --policy: every experience confines its tools (gen_experience.py --policy)


def generate(d, n, shape, flavour, native, exe, oe=None):
    subprocess.check_call([sys.executable, os.path.join(HERE, "gen_experience.py"), d,
                           "--nodes", str(n), "--shape", shape, "--flavour", flavour,
                           "--native-lib", native, "--exe-tool", exe] +
                          (["--policy"] if POLICY else []))
    if ISOLATION:
        # A copy of the built tool plugin is not built in: it takes the kind, and is trusted.
        built = os.path.join(os.path.dirname(oe), "..", "lib", "oe", "plugins", "tool.so")
        os.makedirs(os.path.join(d, "plugins"), exist_ok=True)
        for suffix in ("", ".oe-manifest.json"):
            shutil.copy(built + suffix, os.path.join(d, "plugins", "tool.so" + suffix))
        with open(os.path.join(d, "experience.yaml"), "a") as f:
            f.write("plugins:\n  override: [tool]\n")
        subprocess.check_call([oe, "trust", os.path.join(d, "plugins")],
                              env=dict(os.environ, OE_TRUST_FILE=TRUST_FILE),
                              stdout=subprocess.DEVNULL)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build", "release"))
    p.add_argument("--nodes", default="100,1000,10000,100000")
    p.add_argument("--shapes", default="chain,fanout,random")
    p.add_argument("--flavours", default="native,exe,mjs")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-nodes-exe", type=int, default=10000,
                   help="cap N for the exe flavour (one process per node)")
    p.add_argument("--store", default="",
                   help="a PostgreSQL URL, or `pg` to start a throwaway cluster")
    p.add_argument("--plugin-isolation", action="store_true",
                   help="run the tool plugin (a trusted copy) in a helper process")
    p.add_argument("--plugin-isolation-baseline", action="store_true",
                   help="the same copy of the tool plugin, in-process")
    p.add_argument("--policy", action="store_true",
                   help="give every experience a policy that confines its tools (docs/policy.md)")
    a = p.parse_args()
    global STORE, POLICY, ISOLATION, TRUST_FILE
    POLICY = a.policy
    if a.plugin_isolation or a.plugin_isolation_baseline:
        ISOLATION = "process" if a.plugin_isolation else "in-process"
        TRUST_FILE = os.path.join(tempfile.mkdtemp(prefix="oe-bench-trust-"), "trust.json")
    stop = None
    if a.store == "pg":
        STORE, stop = start_cluster()
    elif a.store:
        STORE = a.store
    try:
        measure(a)
    finally:
        if stop:
            stop()


def measure(a):
    oe = os.path.join(a.build, "bin", "oe")
    native = os.path.join(a.build, "bench", "bench_native_tool.so")
    exe = os.path.join(a.build, "bench", "bench_exe_tool")
    for f in (oe, native, exe):
        if not os.path.exists(f):
            sys.exit("missing %s: build the release preset first" % f)

    print("%-7s %-7s %7s %9s %9s %9s %9s %9s %9s %10s" % (
        "flavour", "shape", "N", "first_s", "first_us", "rerun_s", "rerun_us", "cpu_us",
        "peak_MiB", "B_per_node"))
    for flavour in a.flavours.split(","):
        base_peaks = []
        for _ in range(a.repeat):
            d = tempfile.mkdtemp(prefix="oe-bench-")
            generate(d, 3, "chain", flavour, native, exe, oe)
            run_once(oe, d)
            forget_run(d)
            base_peaks.append(run_once(oe, d)[1])
            shutil.rmtree(d, ignore_errors=True)
        base = statistics.median(base_peaks)
        for shape in a.shapes.split(","):
            for n in [int(x) for x in a.nodes.split(",")]:
                if flavour == "exe" and n > a.max_nodes_exe:
                    continue
                firsts, reruns, peaks, cpus = [], [], [], []
                for _ in range(a.repeat):
                    d = tempfile.mkdtemp(prefix="oe-bench-")
                    generate(d, n, shape, flavour, native, exe, oe)
                    firsts.append(run_once(oe, d)[0])
                    forget_run(d)
                    before = resource.getrusage(resource.RUSAGE_CHILDREN)
                    wall, peak, cpu = run_once(oe, d)
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    # wait4 gives oe's own usage; RUSAGE_CHILDREN grows by oe and every process
                    # it waited for (tools), so the difference is the whole tree.
                    tree = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
                    reruns.append(wall)
                    peaks.append(peak)
                    cpus.append(max(cpu, tree))
                    shutil.rmtree(d, ignore_errors=True)
                first = statistics.median(firsts)
                rerun = statistics.median(reruns)
                peak = statistics.median(peaks)
                cpu = statistics.median(cpus)
                print("%-7s %-7s %7d %9.3f %9.1f %9.3f %9.1f %9.1f %9.1f %10.0f" % (
                    flavour, shape, n, first, first / n * 1e6, rerun, rerun / n * 1e6,
                    cpu / n * 1e6, peak / 2**20, max(0.0, peak - base) / n), flush=True)


if __name__ == "__main__":
    main()
