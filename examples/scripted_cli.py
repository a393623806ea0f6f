#!/usr/bin/env python3
"""A scripted stand-in for the coding CLIs `claude`, `codex` and `gemini`, so the cli-agent
examples run offline and identically every time. An example's `fake-cli/` folder holds three
symlinks to this file; put that folder first on PATH:

  PATH="$PWD/examples/tri-cli-orchestration/fake-cli:$PATH" oe run examples/tri-cli-orchestration

It reads the prompt from the command line each CLI documents (`claude -p PROMPT`, `codex exec
... PROMPT`, `gemini --prompt PROMPT`; stdin when the prompt is not on argv) and answers from
`scripted-cli-answers.json` next to the `fake-cli/` folder (OE_SCRIPTED_CLI_ANSWERS names
another file):

  [{"cli": "codex",                      # optional: only this CLI
    "match": "Summary:",                 # a substring of the prompt, or a list of substrings
    "text": "answer text"}               # the answer, or
   {"match": [...], "json": {...}}]      # an object, printed as compact JSON

The first entry whose every `match` is in the prompt wins; with none, it exits 1 and says so on
stderr, as a real CLI that failed would. The answer is printed in the CLI's documented format:
`claude --output-format json` wraps it in Claude Code's result envelope (with usage counted as
one token per 4 bytes, no timings, so the output depends on the prompt alone); `text`, Codex and
Gemini print it as it is. With OE_SCRIPTED_CLI_LOG set, each call appends
{"cli", "argv", "prompt"} as one JSON line to that file.
"""
import json
import os
import sys

CLI = os.path.basename(sys.argv[0])
ARGS = sys.argv[1:]


def prompt_on_argv():
    if CLI == "claude":
        i = ARGS.index("-p") if "-p" in ARGS else -1
        if 0 <= i < len(ARGS) - 1 and not ARGS[i + 1].startswith("--"):
            return ARGS[i + 1]
        return None
    if CLI == "codex":
        return None if not ARGS or ARGS[-1] == "-" else ARGS[-1]
    if "--prompt" in ARGS and ARGS.index("--prompt") + 1 < len(ARGS):
        return ARGS[ARGS.index("--prompt") + 1]
    return None


def output_format():
    i = ARGS.index("--output-format") if "--output-format" in ARGS else -1
    return ARGS[i + 1] if 0 <= i < len(ARGS) - 1 else "text"


def answers_file():
    explicit = os.environ.get("OE_SCRIPTED_CLI_ANSWERS")
    if explicit:
        return explicit
    here = os.path.dirname(os.path.abspath(sys.argv[0]))  # the fake-cli folder, not the target
    return os.path.join(os.path.dirname(here), "scripted-cli-answers.json")


def find_answer(prompt):
    with open(answers_file(), encoding="utf-8") as f:
        answers = json.load(f)
    for answer in answers:
        if answer.get("cli", CLI) != CLI:
            continue
        match = answer["match"]
        needles = match if isinstance(match, list) else [match]
        if all(needle in prompt for needle in needles):
            return answer
    return None


def claude_envelope(result, prompt):
    return json.dumps({
        "type": "result", "subtype": "success", "is_error": False, "num_turns": 1,
        "result": result, "session_id": "scripted",
        "total_cost_usd": 0,
        "usage": {"input_tokens": max(1, len(prompt) // 4),
                  "output_tokens": max(1, len(result) // 4)},
        "modelUsage": {"claude-scripted": {"inputTokens": max(1, len(prompt) // 4)}},
    })


def main():
    stdin_text = sys.stdin.read()  # returns at EOF: oe closes the CLI's stdin
    prompt = prompt_on_argv()
    if prompt is None:
        prompt = stdin_text
    log = os.environ.get("OE_SCRIPTED_CLI_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"cli": CLI, "argv": ARGS, "prompt": prompt}) + "\n")
    answer = find_answer(prompt)
    if answer is None:
        sys.stderr.write(f"{CLI} (scripted stand-in): no answer in {answers_file()} "
                         f"for the prompt: {prompt[:300]}\n")
        return 1
    text = answer["text"] if "text" in answer else json.dumps(answer["json"])
    if CLI == "claude" and output_format() == "json":
        text = claude_envelope(text, prompt)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
