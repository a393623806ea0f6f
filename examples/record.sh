#!/usr/bin/env bash
# Re-makes an example's shipped recording (`llm-recording.jsonl`): every LLM call answered by
# scripted_llm.py from the example's scripted-answers.json, every coding CLI run by the example's
# stand-ins in fake-cli/ (scripted_cli.py), so the example then runs offline with no key and no
# CLI installed: `oe run examples/NAME --llm-replay examples/NAME/llm-recording.jsonl`.
#   bash examples/record.sh NAME [OE]     (OE: the oe binary; default build/release/bin/oe)
# The run happens in a scratch copy with the cache off, so every call is made and recorded.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: bash examples/record.sh NAME [OE]}
oe=$(realpath "${2:-build/release/bin/oe}")
src=$PWD/examples/$name
scratch=$(mktemp -d)
trap 'kill "${server:-}" 2>/dev/null || true; rm -rf "$scratch"' EXIT
cp -rL "$src" "$scratch/$name"
rm -rf "$scratch/$name/.openexpertise" "$scratch/$name/llm-recording.jsonl"
env=(ANTHROPIC_API_KEY= OPENAI_API_KEY=none)
if [ -f "$src/scripted-answers.json" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 examples/scripted_llm.py "$src/scripted-answers.json" "$port" >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 50); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then break; fi
    sleep 0.1
  done
  env+=(OPENAI_BASE_URL="http://127.0.0.1:$port/v1")
fi
if [ -d "$src/fake-cli" ]; then
  env+=(PATH="$scratch/$name/fake-cli:$PATH")
fi
env "${env[@]}" "$oe" run "$scratch/$name" --no-cache --llm-record "$scratch/recording.jsonl" -q
cp "$scratch/recording.jsonl" "$src/llm-recording.jsonl"
echo "recorded $(wc -l < "$src/llm-recording.jsonl") exchanges into examples/$name/llm-recording.jsonl"
