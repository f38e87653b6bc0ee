#!/usr/bin/env bash
# Context-selection quality on the IRC disentanglement dev set (see crates/chatctx/examples/irc_eval.rs).
# Usage: bench/irc_eval.sh [DATASET.jsonl]
set -euo pipefail
cd "$(dirname "$0")/.."
data=${1:-../shared/datasets/irc-disentanglement/dev.events.jsonl}
cargo run --release -q -p chatctx --example irc_eval -- "$data"
