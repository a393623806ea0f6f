#!/usr/bin/env python3
"""Writes a one-line summary from the counts in state and the edge output of count_words."""
import json
import sys

args = json.load(sys.stdin)
state = args["_state"]
unique = args["_edge_inputs"]["count_words"]["unique_words"]
top = ", ".join("%s (%d)" % (entry["word"], entry["count"]) for entry in state["top_words"])
summary = "%d words, %d distinct; most frequent: %s" % (state["word_count"], unique, top)

json.dump({"state_delta": {"summary": summary}, "metrics": {"tokens_in": 0}}, sys.stdout)
