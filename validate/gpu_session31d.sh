#!/usr/bin/env bash
# Session 31's fourth device call: channels-last depthwise 5x5 and 7x7 layers (convprobe
# --family depthwise-cl-large, seed 71 to fit, 72 to check, with their kernels): blind27's
# st_test_convnext2 took 16.8 x (x + y) in such a weight gradient, past the probes.
#   bash validate/gpu_session31d.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-240} L=/tmp/logs31d
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
for s in 71 72; do
  python3 -m validate convprobe --family depthwise-cl-large --seed $s --n 300 --kernels --deadline $dl \
    --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1 &
done
finish
cat /tmp/res/cp-*.jsonl > $OUT/convprobe-depthwise-cl-large-$tag.jsonl
wc -l /tmp/res/cp-*.jsonl
echo "total $(( $(date +%s) - t0 ))s"
