#!/usr/bin/env bash
# Runs the libFuzzer target for SECONDS, politely (nice, one job: the machine is shared).
# Seeds: models/*.onnx, the small models the tests build, the committed regressions.
#   bash tests/fuzz/run.sh BUILD_DIR SECONDS [extra libFuzzer flags]
# FUZZ_CORPUS names the corpus folder inside BUILD_DIR (default fuzz-corpus): a run
# with -max_len=16384 is quicker with a corpus of its own.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:?build dir}; seconds=${2:-600}; shift 2 || true
corpus=$build/${FUZZ_CORPUS:-fuzz-corpus}; findings=$build/findings
mkdir -p "$corpus" "$findings" "$build/fuzz-seeds"
cp models/*.onnx models/*/*.onnx "$build/fuzz-seeds/" 2>/dev/null || true
cp tests/fuzz/regressions/* "$build/fuzz-seeds/" 2>/dev/null || true
/usr/bin/python3 tests/fuzz/make_seeds.py "$build/fuzz-seeds" >/dev/null || echo "run.sh: no python3-onnx, small seeds skipped" >&2
# Generated transformer stacks, when a regular build's benchmark is at hand.
gen=${MEMEST_BENCH:-build-bench/bench/memest_bench}
if [ -x "$gen" ]; then
  for n in 60 300; do "$gen" --gen $n "$build/fuzz-seeds/transformer_$n.onnx"; done
fi
# -jobs writes fuzz-N.log into the working directory: keep it in the build dir.
cd "$build"
exec nice -n 10 ./tests/fuzz/memest_fuzz "${FUZZ_CORPUS:-fuzz-corpus}" fuzz-seeds \
  -jobs=1 -workers=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix=findings/ -print_final_stats=1 "$@"
