#!/usr/bin/env python3
"""State history growth of an array_append field (issue 10, item 2).

  history_growth.py --oe build/release/bin/oe [--items 20000] [--keep DIR]

Builds an experience whose seed node writes a list of N items and whose for_each node (one call
per item, an .mjs tool) appends each item to one array_append field, runs it once with
`oe run -q --no-cache`, and prints the wall time, the size of state.sqlite (with its -wal) and
the number and total text size of its history rows. Before D17 every history row held the
whole old and new list (quadratic: 2.2 GB for 20,000 items); with it an append row holds the
appended item (linear).
"""
import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

SEED = """export default () => ({
  state_delta: { items: Array.from({ length: %d }, (_, i) => ({ id: i, text: "item " + i })) },
});
"""
APPEND = """export default (args) => ({ state_delta: { seen: [args.$item] } });
"""
EXPERIENCE = """name: history-growth
version: 0.1.0
state:
  schema:
    items: { type: array }
    seen: { type: array, merge: array_append }
graph:
  nodes:
    - { id: seed, kind: tool, impl: ./tools/seed.mjs, writes: [items] }
    - { id: each, kind: tool, impl: ./tools/append.mjs, writes: [seen],
        for_each: { source: $.items } }
  edges: [ { from: seed, to: each } ]
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--oe", required=True, help="the oe binary")
    p.add_argument("--items", type=int, default=20000)
    p.add_argument("--keep", help="build the experience here and keep it (default: a temp dir)")
    a = p.parse_args()

    d = a.keep or tempfile.mkdtemp(prefix="oe-history-growth-")
    os.makedirs(os.path.join(d, "tools"), exist_ok=True)
    with open(os.path.join(d, "tools", "seed.mjs"), "w") as f:
        f.write(SEED % a.items)
    with open(os.path.join(d, "tools", "append.mjs"), "w") as f:
        f.write(APPEND)
    with open(os.path.join(d, "experience.yaml"), "w") as f:
        f.write(EXPERIENCE)
    shutil.rmtree(os.path.join(d, ".openexpertise"), ignore_errors=True)

    start = time.perf_counter()
    proc = subprocess.run([a.oe, "run", d, "-q", "--no-cache"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("oe run failed:\n" + proc.stderr.decode(errors="replace")[-2000:])

    db = os.path.join(d, ".openexpertise", "state.sqlite")
    size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
    con = sqlite3.connect(db)
    rows, text = con.execute(
        "SELECT COUNT(*), COALESCE(SUM(COALESCE(length(value_old), 0) + length(value_new)), 0) "
        "FROM state_history WHERE field = 'seen'").fetchone()
    seen = con.execute("SELECT json_array_length(value) FROM state_snapshot "
                       "WHERE field = 'seen'").fetchone()
    con.close()
    print("items %d: %.2f s, state.sqlite %.1f MiB, %d history rows of 'seen' holding %.1f MiB "
          "of text, snapshot %s items" % (a.items, wall, size / 2**20, rows, text / 2**20,
                                          seen[0] if seen else "no"))
    if not a.keep:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
