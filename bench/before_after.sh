#!/usr/bin/env bash
# The core benchmarks and bench/serve.sh on an earlier commit and on the working tree, one after the other on
# the same machine, so a change can be shown not to slow anything down.
# Usage: bench/before_after.sh BASE_COMMIT [SERVE_SECONDS]   (writes bench/out/before_after.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: bench/before_after.sh BASE_COMMIT [SERVE_SECONDS]}
secs=${2:-10}
out=bench/out; mkdir -p "$out"
tree="${TMPDIR:-/tmp}/chatctx-before-$(git rev-parse --short "$base")"
[ -d "$tree" ] || git worktree add --detach "$tree" "$base" >/dev/null
# The base tree builds into a target directory of its own (target/before-after-base; dependencies compile once more,
# the first time only). One directory for both trees does not work: cargo names a workspace crate's build by its
# path inside the workspace, so both trees' builds are the same artifacts, and it judges them up to date by the
# files' times, which the second tree's sources (older than the first tree's build) pass. The tree run second
# then ran the first one's binaries unrebuilt (found 2026-11-29: `store_bench` printed the base's text).
mkdir -p target/before-after-base
ln -sfn "$PWD/target/before-after-base" "$tree/target"
run() { # label, directory
  echo "### $1 ($(git -C "$2" rev-parse --short HEAD), $(nproc) cores)"
  for b in tools scenario ingest; do
    (cd "$2" && cargo bench -q -p chatctx-core --bench "$b" 2>/dev/null) | grep -vE "^\s*$|Timer precision"
  done
  (cd "$2" && bash bench/serve.sh "$secs" 2>&1) | grep -E "^==|Requests/sec|50%|99%|restart|loaded"
}
{ run before "$tree"; run after "$PWD"; } | tee "$out/before_after.txt"
