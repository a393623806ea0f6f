#!/usr/bin/env python3
"""A scripted stand-in for an OpenAI-compatible server, used to (re)make the examples' shipped
LLM recordings without an API key. It answers POST /v1/chat/completions from an answers file:

  [{"match": "<substring of the last user message>",
    "text": "<answer text>"}                       # text answer, or
   {"match": "...", "tool": {"name": "structured_output", "input": {...}}}]

The first entry whose `match` is in the last user message wins. Usage is reported as one token
per 4 bytes of the prompt and of the answer.

  python3 examples/scripted_llm.py examples/review-branch/scripted-answers.json 8765 &
  OPENAI_BASE_URL=http://127.0.0.1:8765/v1 OPENAI_API_KEY=none ANTHROPIC_API_KEY= \\
      oe run examples/review-branch --no-cache \\
      --llm-record examples/review-branch/llm-recording.jsonl

With a real key instead (and no OPENAI_BASE_URL), the same command records real answers.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


def load_answers(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def completion(model, prompt, answer):
    if "tool" in answer:
        arguments = json.dumps(answer["tool"]["input"])
        message = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "call_1", "type": "function",
                                   "function": {"name": answer["tool"]["name"],
                                                "arguments": arguments}}]}
        finish, out = "tool_calls", arguments
    else:
        message = {"role": "assistant", "content": answer["text"]}
        finish, out = "stop", answer["text"]
    return {"id": "chatcmpl-scripted", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": max(1, len(prompt) // 4),
                      "completion_tokens": max(1, len(out) // 4)}}


class Handler(BaseHTTPRequestHandler):
    answers = []

    def do_POST(self):  # noqa: N802 (http.server naming)
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        users = [m.get("content") or "" for m in body.get("messages", []) if m["role"] == "user"]
        prompt = users[-1] if users else ""
        for answer in self.answers:
            if answer["match"] in prompt:
                reply = completion(body.get("model", ""), prompt, answer)
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
        data = json.dumps({"error": {"message": "no scripted answer for: " + prompt[:200]}})
        self.send_response(400)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(data.encode())

    def log_message(self, *args):
        pass


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scripted_llm.py ANSWERS.json PORT")
    Handler.answers = load_answers(sys.argv[1])
    HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()


if __name__ == "__main__":
    main()
