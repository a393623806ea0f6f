#!/usr/bin/env python3
"""Counts the words of _state.text (declared in `reads`) and keeps the args.top most frequent."""
import collections
import json
import re
import sys

args = json.load(sys.stdin)
words = re.findall(r"[a-z']+", args["_state"]["text"].lower())
counts = collections.Counter(words)
# Most frequent first; ties in alphabetical order, so the result is the same on every run.
ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[: args.get("top", 3)]

print("counted %d words from %d characters" % (len(words),
      args["_edge_inputs"]["load_text"]["characters"]), file=sys.stderr)
json.dump({
    "state_delta": {
        "word_count": len(words),
        "top_words": [{"word": word, "count": count} for word, count in ranked],
    },
    "edge_output": {"unique_words": len(counts)},
}, sys.stdout)
