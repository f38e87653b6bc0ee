#!/usr/bin/env bash
# Selection + rendering speed against LangChain's trim_messages (langchain-core) and LlamaIndex's
# ChatMemoryBuffer.get (llama-index-core), on the same generated 2,000-message history and token budget.
# Installs the peers from PyPI into a throwaway venv under bench/peers/.venv. Not part of CI.
# Usage: bench/peers/compare.sh [MESSAGES] [BUDGET]
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-2000}
budget=${2:-4000}
mkdir -p bench/out
venv=bench/peers/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check langchain-core llama-index-core
fi
"$venv/bin/python" bench/peers/peers.py generate "$n" "$budget" bench/out/history.json
cargo build --release -q -p chatctx --example history_bench
echo "history: $n messages, token budget $budget; $(nproc) cores"
./target/release/examples/history_bench bench/out/history.json | tee bench/out/chatctx.jsonl
"$venv/bin/python" bench/peers/peers.py measure bench/out/history.json | tee bench/out/peers.jsonl
"$venv/bin/python" - <<'PY'
import json
ours = [json.loads(l) for l in open("bench/out/chatctx.jsonl")]
peers = [json.loads(l) for l in open("bench/out/peers.jsonl")]
fastest = min(peers, key=lambda p: p["p50_us"])
for o in ours:
    if "token budget" in o["case"]:
        # Issue 32: the whole answer at least 50x the fastest peer, the prompt alone at least 100x.
        target = 100 if "prompt" in o["case"] else 50
        print(f"{o['case']}: p50 {o['p50_us']:.1f} µs vs the fastest peer ({fastest['case']}) p50 "
              f"{fastest['p50_us']:.1f} µs: {fastest['p50_us'] / o['p50_us']:.0f}x faster (target >= {target}x)")
PY
