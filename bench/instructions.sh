#!/usr/bin/env bash
# Instruction counts of the core's hot paths (valgrind's callgrind): figures that do not move with the machine's
# load, for before/after comparisons when wall-clock timings drift (docs/benchmarks.md). They count work, not
# time: a change that saves instructions but adds cache misses shows here as a gain, so a wall-clock pair run in
# turn (bench/before_after.sh) is still what a speed claim rests on.
#   ingest   instructions per event inside the steady-state loop of `ingest_profile` (conversations full, each
#            event evicts one; about 200,000 events), and the last-level cache misses valgrind's cache model
#            counts per event (reads + writes), with the L3 the kernel reports as that model (below)
#   resolve  per `resolve_reference_target` call on the forum of the decisions benchmark, records off and on
#   history  per `get_chat_history_context` call, the same
# With BASE, the same counts for that commit first (built in a worktree beside this one, with this tree's two
# profiling examples copied in when it lacks them), so one run gives before and after. The worktree
# ($TMPDIR/chatctx-instructions-BASE) and its build (target/instructions-BASE) stay for the next run; a BASE
# older than `records_profile`'s support code (before 3c8bb88) counts ingest only;
# `git worktree remove --force DIR` drops the worktree. Two builds of one source in different directories count
# within ~0.1 % of each other (code placement); a change smaller than that is not seen.
# Needs valgrind (`apt-get install -y valgrind`). About two minutes per tree (callgrind runs ~50x slower than
# native, its cache model slower still).
# Usage: bench/instructions.sh [BASE]   (writes bench/out/instructions.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install -y valgrind" >&2; exit 1; }
out=bench/out; mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

callgrind() { # extra valgrind option (or ''), toggle, program and arguments: callgrind's counts inside the toggled
  # function, instructions first (with --cache-sim=yes: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw)
  local opt=$1 toggle=$2; shift 2
  valgrind --tool=callgrind $opt --callgrind-out-file="$tmp/cg" --toggle-collect="$toggle" "$@" >"$tmp/stdout" 2>"$tmp/stderr"
  sed -n 's/.*Collected : \(.*\)/\1/p' "$tmp/stderr"
}
count() { callgrind '' "$@" | awk '{print $1}'; }                   # instructions
# The last-level cache valgrind simulates: the L3 the kernel reports (sysfs), 32 MiB 16-way on this machine. Left to
# itself valgrind reads the size from cpuid, which in this machine's VM says 320 MiB direct-mapped, and simulates a
# 256 MiB direct-mapped cache: misses of a working set past the real L3 then do not show, and conflict misses that
# the real cache does not have do (docs/benchmarks-issue-32.md, "a realistic last-level cache"). CHATCTX_LL
# (`SIZE,ASSOC,LINE`) overrides it; valgrind models no prefetching either, so a stream read in order (the profile's
# prepared events) counts as misses a real core mostly hides.
l3=/sys/devices/system/cpu/cpu0/cache/index3
if [ -z "${CHATCTX_LL:-}" ] && [ -r "$l3/size" ]; then
  kib=$(sed 's/K$//' "$l3/size")
  CHATCTX_LL="$((kib * 1024)),$(cat "$l3/ways_of_associativity"),$(cat "$l3/coherency_line_size")"
fi
ll_opt=${CHATCTX_LL:+--LL=$CHATCTX_LL}
misses() { callgrind "--cache-sim=yes $ll_opt" "$@" | awk '{print $1, $8 + $9}'; } # instructions, last-level data misses
per() { awk -v a="$1" -v n="$2" -v f="${3:-%.0f}" 'BEGIN { printf f, a / n }'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f %%", (b / a - 1) * 100 }'; }

counts() { # label, tree: builds the examples there and prints the counts
  local label=$1 tree=$2
  # Symbols are needed: the `profiling` profile, or `release` in trees older than it (release kept them then).
  local prof=profiling
  grep -q '^\[profile.profiling\]' "$tree/Cargo.toml" || prof=release
  (cd "$tree" && cargo build -q --profile $prof -p chatctx-core --example ingest_profile)
  local bin="$tree/target/$prof/examples"
  echo "### $label: $(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet HEAD || echo ', with changes'); valgrind $(valgrind --version | sed 's/valgrind-//'), $(nproc) cores, last-level cache ${CHATCTX_LL:-as valgrind reads it}"
  local total events ll
  read -r total ll < <(misses 'ingest_profile::steady' "$bin/ingest_profile")
  events=$(awk '{print $1; exit}' "$tmp/stdout")
  echo "ingest (steady state, $events events): $(per "$total" "$events") instructions per event, $(per "$ll" "$events" %.2f) last-level cache misses per event"
  if [ "$label" = after ]; then
    (cd "$tree" && cargo build -q --profile $prof -p chatctx-core --example records_profile)
  elif ! (cd "$tree" && cargo build -q --profile $prof -p chatctx-core --example records_profile 2>/dev/null); then
    echo "resolve, history: records_profile does not build at this commit; not counted"
    return
  fi
  local tool fn calls name off on
  for tool in resolve history; do
    case $tool in
      resolve) fn='*Engine>::resolve_reference_target'; calls=2000; name=resolve_reference_target ;;
      history) fn='*Engine>::get_chat_history_context'; calls=500; name=get_chat_history_context ;;
    esac
    off=$(count "$fn" "$bin/records_profile" "$tool" off)
    on=$(count "$fn" "$bin/records_profile" "$tool" on)
    echo "$name: records off $(per "$off" $calls), on $(per "$on" $calls) instructions per call ($(pct "$off" "$on"))"
  done
}

{
  if [ $# -ge 1 ]; then
    base=$(git rev-parse --short "$1")
    tree="${TMPDIR:-/tmp}/chatctx-instructions-$base"
    [ -d "$tree" ] || git worktree add --detach "$tree" "$base" >/dev/null
    # A target directory of its own under this one's, one per base (dependencies compile once more, the first time
    # only): builds of two trees in one directory are the same artifacts to cargo, which judges them up to date by
    # the files' times, so a base whose worktree is older than another base's build would count that build.
    mkdir -p "target/instructions-$base"
    ln -sfn "$PWD/target/instructions-$base" "$tree/target"
    for ex in ingest_profile records_profile; do
      f=crates/chatctx-core/examples/$ex.rs
      grep -q 'fn steady\|records_profile' "$tree/$f" 2>/dev/null || cp "$f" "$tree/$f"
    done
    counts before "$tree"
  fi
  counts after "$PWD"
} | tee "$out/instructions.txt"
