#!/usr/bin/env python3
"""What the live view costs a run: `oe run` of N native tool nodes in a pseudo-terminal.

  live_view.py --build build/release [--nodes 10000] [--shape fanout] [--repeat 5]

Generates an experience (gen_experience.py, native tool), runs it once to write its spec
snapshot, then re-runs it (state, cache and logs deleted before each run, so every node executes)
in a pty of 100x30 with TERM=xterm, alternating three modes so that a busy machine affects them
alike:

  tui     `oe run --tui`: the live view, redrawn at most 10 times a second;
  no-tui  `oe run --no-tui`: today's plain lines, one per node, on the terminal;
  quiet   `oe run -q`: no progress at all (the reference).

A thread drains the pty as a terminal would. Prints, per mode, the median wall time, CPU time
(user + sys of oe and its children), both per node, and the bytes oe wrote to the terminal.
"""
import argparse
import fcntl
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MODES = {"tui": ["--tui"], "no-tui": ["--no-tui"], "quiet": ["-q"]}


def run_in_pty(oe, exp_dir, flags):
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    received = [0]

    def drain():
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                return  # EIO: the terminal side is closed
            if not chunk:
                return
            received[0] += len(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    env = dict(os.environ, TERM="xterm")
    env.pop("OE_PLUGIN_PATH", None)
    start = time.perf_counter()
    proc = subprocess.Popen([oe, "run", exp_dir] + flags, stdin=slave, stdout=slave,
                            stderr=slave, env=env)
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    os.close(slave)
    reader.join()
    os.close(master)
    if status != 0:
        sys.exit(f"oe run {' '.join(flags)} failed with status {status}")
    return wall, rusage.ru_utime + rusage.ru_stime, received[0]


def reset(exp_dir):
    work = os.path.join(exp_dir, ".openexpertise")
    for name in os.listdir(work):
        if name.endswith(".spec-snapshot"):
            continue
        path = os.path.join(work, name)
        shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", required=True)
    p.add_argument("--nodes", type=int, default=10000)
    p.add_argument("--shape", default="fanout")
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    oe = os.path.join(a.build, "bin", "oe")
    native = os.path.join(a.build, "bench", "bench_native_tool.so")
    with tempfile.TemporaryDirectory() as tmp:
        exp = os.path.join(tmp, "exp")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_experience.py"), exp, "--nodes",
                        str(a.nodes), "--shape", a.shape, "--flavour", "native", "--native-lib",
                        native, "--exe-tool", native], check=True)
        run_in_pty(oe, exp, ["-q"])  # writes the spec snapshot the re-runs read
        results = {mode: [] for mode in MODES}
        for _ in range(a.repeat):
            for mode, flags in MODES.items():
                reset(exp)
                results[mode].append(run_in_pty(oe, exp, flags))
    print(f"{a.nodes} nodes, {a.shape}, native tool, pty 100x30, median of {a.repeat}")
    print(f"{'mode':8} {'wall µs/node':>13} {'CPU µs/node':>12} {'bytes to tty':>13}")
    for mode, runs in results.items():
        wall = statistics.median(r[0] for r in runs) / a.nodes * 1e6
        cpu = statistics.median(r[1] for r in runs) / a.nodes * 1e6
        size = statistics.median(r[2] for r in runs)
        print(f"{mode:8} {wall:13.1f} {cpu:12.1f} {size:13,.0f}")


if __name__ == "__main__":
    main()
