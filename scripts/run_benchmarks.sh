#!/usr/bin/env bash
# The README performance figures: latency (idle and with two busy background processes,
# against bm25s), scale (synthetic 100k, and 1M with --1m) and batch scoring (10M pairs
# Parquet to Parquet), JSON written to OUT.
#
#   scripts/run_benchmarks.sh [--1m] [OUT]     # OUT defaults to bench-results/
#   scripts/run_benchmarks.sh --smoke          # ~35 s: the code paths only (CI), numbers meaningless
#
# Data: ../shared/data beside the repository, or TOOLSIFT_DATA. Numbers are reported,
# never asserted; run on a quiet machine for publishable figures.
set -euo pipefail
cd "$(dirname "$0")/.."
scale="100k"
if [[ "${1:-}" == "--smoke" ]]; then
  exec env TOOLSIFT_BENCH_QUERIES=20 TOOLSIFT_BENCH_SCALE=5k TOOLSIFT_BENCH_PAIRS=200k python -m pytest \
    benchmarks/bench_latency.py benchmarks/bench_scale.py benchmarks/bench_batch.py -q -p no:cacheprovider \
    --benchmark-disable -k "not hybrid and not ray_two_workers"
fi
if [[ "${1:-}" == "--1m" ]]; then scale="100k,1M"; shift; fi
out="${1:-bench-results}"
mkdir -p "$out"
export TOOLSIFT_BENCH_OUT="$out"
python -m pytest benchmarks/bench_latency.py -q -p no:cacheprovider | tee "$out/bench_latency.log"
TOOLSIFT_BENCH_SCALE="$scale" python -m pytest benchmarks/bench_scale.py -q -p no:cacheprovider \
  | tee "$out/bench_scale.log"
python -m pytest benchmarks/bench_batch.py -q -p no:cacheprovider | tee "$out/bench_batch.log"
