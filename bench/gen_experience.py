#!/usr/bin/env python3
"""Writes an experience with N tool nodes in one of three shapes, for one tool flavour.

  gen_experience.py OUT_DIR --nodes N --shape chain|fanout|random --flavour native|exe|mjs
                    [--native-lib PATH] [--exe-tool PATH] [--seed S] [--policy]

--policy adds an experience-wide policy (docs/policy.md) that confines every tool: read the
folder, write only $TMP, no network, PATH only, CPU and open-file limits. A native (.so) tool
runs inside oe and cannot be confined, so its policy says enforce: best_effort (the run then
says so per call); the others say required.

Shapes: chain (n0 -> n1 -> ... ), fanout (root -> N-2 leaves -> join), random (each node takes up
to 3 predecessors among the 50 before it, fixed seed). Every node writes one of 16 last_wins
fields, so state stays small and the figure is the host's per-node cost, not the state's size.
"""
import argparse
import os
import random
import shutil

MJS_TOOL = """export default (args) => ({ state_delta: { [args.out]: args.i } });
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--nodes", type=int, required=True)
    p.add_argument("--shape", choices=["chain", "fanout", "random"], required=True)
    p.add_argument("--flavour", choices=["native", "exe", "mjs"], required=True)
    p.add_argument("--native-lib")
    p.add_argument("--exe-tool")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--policy", action="store_true")
    a = p.parse_args()

    n = max(a.nodes, 3)
    os.makedirs(os.path.join(a.out, "tools"), exist_ok=True)
    if a.flavour == "native":
        impl = "./tools/bench_tool.so"
        shutil.copy(a.native_lib, os.path.join(a.out, "tools", "bench_tool.so"))
    elif a.flavour == "exe":
        impl = "./tools/bench_tool"
        shutil.copy(a.exe_tool, os.path.join(a.out, "tools", "bench_tool"))
    else:
        impl = "./tools/bench_tool.mjs"
        with open(os.path.join(a.out, "tools", "bench_tool.mjs"), "w") as f:
            f.write(MJS_TOOL)

    edges = []
    if a.shape == "chain":
        edges = [(i - 1, i) for i in range(1, n)]
    elif a.shape == "fanout":
        edges = [(0, i) for i in range(1, n - 1)] + [(i, n - 1) for i in range(1, n - 1)]
    else:
        rng = random.Random(a.seed)
        for i in range(1, n):
            lo = max(0, i - 50)
            for j in sorted(set(rng.randrange(lo, i) for _ in range(rng.randint(1, 3)))):
                edges.append((j, i))

    lines = ["name: bench-%s-%s-%d" % (a.shape, a.flavour, n), "version: 0.1.0"]
    if a.policy:
        lines += ["policy:",
                  "  enforce: %s" % ("best_effort" if a.flavour == "native" else "required"),
                  "  fs: { read: [\".\"], write: [\"$TMP\"] }",
                  "  network: none",
                  "  env: [PATH]",
                  "  limits: { cpu_seconds: 60, open_files: 256 }"]
    lines += ["state:", "  schema:"]
    lines += ["    f%d: { type: number }" % k for k in range(16)]
    lines += ["graph:", "  nodes:"]
    for i in range(n):
        lines.append("    - { id: n%d, kind: tool, impl: %s, args: { out: f%d, i: %d }, writes: [f%d] }"
                     % (i, impl, i % 16, i, i % 16))
    lines.append("  edges:")
    if not edges:
        lines[-1] += " []"
    for f, t in edges:
        lines.append("    - { from: n%d, to: n%d }" % (f, t))
    with open(os.path.join(a.out, "experience.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
