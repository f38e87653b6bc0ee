#!/usr/bin/env bash
# What the durable store asks of the disk, counted rather than timed (the counts do not move with the machine's
# load): `store_bench` ingests N messages (default 200,000) in batches of 1,000 under `strace -c`, which counts
# the process's write, read and sync calls. Their number per batch is the figure to compare before and after a
# change to the SQLite store (each `pwrite` is one page, 16 KiB, or one WAL frame header); the restart at the end
# of the run is counted too (its reads). Needs strace (`apt-get install -y strace`).
# Usage: bench/store_writes.sh [N] [BINARY]   (BINARY: a `store_bench` built elsewhere, e.g. of a base commit)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v strace >/dev/null || { echo "strace is needed: apt-get install -y strace" >&2; exit 1; }
n=${1:-200000}
bin=${2:-}
if [ -z "$bin" ]; then
  cargo build --release -q -p chatctx --example store_bench
  bin=target/release/examples/store_bench
fi
out=bench/out; mkdir -p "$out"
db="$out/store_writes.db"
rm -f "$db" "$db-wal" "$db-shm"
strace -f -c -o "$out/store_writes.strace" -e trace=pwrite64,pread64,fsync,fdatasync "$bin" "$n" "$db" >/dev/null 2>&1
batches=$(( (n + 999) / 1000 ))
echo "store_bench $n ($batches batches of 1,000; $(nproc) cores); system calls, in all and per batch:"
awk -v b="$batches" '$NF ~ /^(pwrite64|pread64|fsync|fdatasync)$/ { printf "  %-10s %9d  %8.1f a batch\n", $NF, $4, $4 / b }' \
  "$out/store_writes.strace"
rm -f "$db" "$db-wal" "$db-shm"
