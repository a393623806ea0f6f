#!/usr/bin/env python3
"""Reads the file named by args.path (relative to the experience directory, the tool's cwd)."""
import json
import sys

args = json.load(sys.stdin)
with open(args["path"], encoding="utf-8") as source:
    text = source.read()

json.dump({
    "state_delta": {"text": text},
    "edge_output": {"path": args["path"], "characters": len(text)},
}, sys.stdout)
