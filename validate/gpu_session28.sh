#!/usr/bin/env bash
# Session 28's device call (issue 18): a fresh blind sample (blind24: sample seed 30,
# random seed 32), measured and committed unread; beside it, the whole allocation event
# sequences (seqtrace28) of blind23's convolution misses (random31, b1-fp16-adam, at
# af355d7's estimate, measured on an H100: 3-D rnd31_106 -32.9%, rnd31_108 -27.0%,
# rnd31_157 -23.9%; 2-D rnd31_65 -20.9%, rnd31_110 -9.7%, rnd31_60 -9.6%; 1-D rnd31_98
# -7.7%). Training data, not blind.
#   bash validate/gpu_session28.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-430} L=/tmp/logs28
# the card in the file names: the device may lend an H100 for an H200
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 30 32
seqtrace t1 rnd31_106/b1-fp16-adam,rnd31_65/b1-fp16-adam,rnd31_60/b1-fp16-adam,rnd31_98/b1-fp16-adam &
seqtrace t2 rnd31_108/b1-fp16-adam,rnd31_157/b1-fp16-adam,rnd31_110/b1-fp16-adam &
finish
collect_blind 30 32 24
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace28-$tag.jsonl
tar -cJf $OUT/logs-session28.tar.xz -C /tmp logs28
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
