#!/usr/bin/env python3
"""Whole-run scaling benchmark: generates experiences (gen_experience.py) and times `oe run`.

  run_scaling.py --build build/release [--nodes 100,1000,10000,100000]
                 [--shapes chain,fanout,random] [--flavours native,exe,mjs] [--repeat 3]

Prints, per (flavour, shape, N): the median wall time of the whole `oe run` process, wall/N (the
per-node cost including the tool), and the peak RSS with its growth per node. Each repetition uses
a fresh experience folder (cold state and cache), as a first run does.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def run_once(oe, exp_dir):
    start = time.perf_counter()
    proc = subprocess.Popen([oe, "run", exp_dir, "-q"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("oe run failed in %s:\n%s" % (exp_dir, err[-2000:]))
    return wall, rusage.ru_maxrss * 1024


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build", "release"))
    p.add_argument("--nodes", default="100,1000,10000,100000")
    p.add_argument("--shapes", default="chain,fanout,random")
    p.add_argument("--flavours", default="native,exe,mjs")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--max-nodes-exe", type=int, default=10000,
                   help="cap N for the exe flavour (one process per node)")
    a = p.parse_args()

    oe = os.path.join(a.build, "bin", "oe")
    native = os.path.join(a.build, "bench", "bench_native_tool.so")
    exe = os.path.join(a.build, "bench", "bench_exe_tool")
    for f in (oe, native, exe):
        if not os.path.exists(f):
            sys.exit("missing %s: build the release preset first" % f)

    print("%-7s %-7s %7s %10s %12s %10s %12s" % ("flavour", "shape", "N", "wall_s", "us_per_node",
                                                "peak_MiB", "B_per_node"))
    for flavour in a.flavours.split(","):
        for shape in a.shapes.split(","):
            for n in [int(x) for x in a.nodes.split(",")]:
                if flavour == "exe" and n > a.max_nodes_exe:
                    continue
                walls, peaks = [], []
                for _ in range(a.repeat):
                    d = tempfile.mkdtemp(prefix="oe-bench-")
                    subprocess.check_call([sys.executable, os.path.join(HERE, "gen_experience.py"), d,
                                           "--nodes", str(n), "--shape", shape, "--flavour", flavour,
                                           "--native-lib", native, "--exe-tool", exe])
                    wall, peak = run_once(oe, d)
                    walls.append(wall)
                    peaks.append(peak)
                    shutil.rmtree(d, ignore_errors=True)
                wall = statistics.median(walls)
                peak = statistics.median(peaks)
                print("%-7s %-7s %7d %10.3f %12.1f %10.1f %12.0f" % (
                    flavour, shape, n, wall, wall / n * 1e6, peak / 2**20, peak / n), flush=True)


if __name__ == "__main__":
    main()
