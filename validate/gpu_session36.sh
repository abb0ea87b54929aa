#!/usr/bin/env bash
# Session 36's first device call (issue 18): a fresh blind sample (blind32: sample seed 39,
# random seed 40), measured and committed unread, compared once before any change of the
# session; beside it, training data, not blind: convolutions both strided and dilated
# (convprobe --family strided-dilated, seed 91 to fit, 92 to check, with their kernels),
# which no earlier probe family drew (blind31's rnd39_142: a 7x7 stride-2 dilation-2 layer
# whose weight gradient took 26.6 MB where memest's envelope said 14.6).
#   bash validate/gpu_session36.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-330} L=/tmp/logs36
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 39 40
( for s in 91 92; do
    python3 -m validate convprobe --family strided-dilated --seed $s --n 250 --kernels --deadline $dl \
      --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1
  done ) &
finish
collect_blind 39 40 32
cat /tmp/res/cp-*.jsonl > $OUT/convprobe-strided-dilated-$tag.jsonl
tar -cJf $OUT/logs-session36.tar.xz -C /tmp logs36
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
