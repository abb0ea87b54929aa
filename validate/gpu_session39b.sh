#!/usr/bin/env bash
# Session 39's second device call (issue 18), training data for the next session, not
# blind: transposed convolutions with one input channel per group (convprobe --family
# tconv-depthwise, seed 95 to fit and 96 to check, with their kernels), which PyTorch sends
# to cuDNN as grouped layers (f198984 gave their weight gradients the grouped envelope and
# kept their forward and input gradient at none, on rnd40_87 and 3 probes).
#   bash validate/gpu_session39b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-280} L=/tmp/logs39b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
for s in 95 96; do
  python3 -m validate convprobe --family tconv-depthwise --seed $s --n 200 --kernels --deadline $dl \
      --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1 &
done
finish
cat /tmp/res/cp-*.jsonl 2>/dev/null | xz > $OUT/convprobe-tconv-depthwise-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "probes: $(cat /tmp/res/cp-*.jsonl 2>/dev/null | wc -l)"
echo "total $(( $(date +%s) - t0 ))s"
