#!/usr/bin/env bash
# Session 26's device call (issue 18): a fresh blind sample (blind22: sample seed 28,
# random seed 30), measured and committed unread; beside it, the whole allocation event
# sequences (seqtrace26) of the misses blind20 and blind21 left: random28's 3-D
# convolution nets rnd28_61 (-70.9%) and rnd28_59, random29's rnd29_12 (-31.3%), all
# b1-fp16-adam, and sample26's sh_esm_cls (-20.6%, b2-fp32-adam). Training data, not blind.
#   bash validate/gpu_session26.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-440} tag=h200-torch2.11 L=/tmp/logs26
source validate/gpu_lib.sh
blind_sample 28 30
seqtrace t1 rnd28_61/b1-fp16-adam,rnd28_59/b1-fp16-adam &
seqtrace t2 rnd29_12/b1-fp16-adam,sh_esm_cls/b2-fp32-adam &
finish
collect_blind 28 30 22
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace26-$tag.jsonl
tar -cJf $OUT/logs-session26.tar.xz -C /tmp logs26
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
