#!/usr/bin/env bash
# Session 26's second device call (issue 18): the whole allocation event sequences
# (seqtrace26b) of blind21's 1-D and 2-D convolution misses (random29, b1-fp16-adam, at
# the estimate of ab2a785): rnd29_9 (-15.9%), rnd29_129 (-9.1%), rnd29_185 (-6.1%),
# rnd29_88 (legacy -5.6%), rnd29_5 (-4.9%), rnd29_150 (-4.2%), rnd29_71 (legacy -3.9%).
# Training data, not blind.
#   bash validate/gpu_session26b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-200} tag=h200-torch2.11 L=/tmp/logs26b
source validate/gpu_lib.sh
seqtrace t1 rnd29_9/b1-fp16-adam,rnd29_129/b1-fp16-adam,rnd29_185/b1-fp16-adam &
seqtrace t2 rnd29_88/b1-fp16-adam,rnd29_5/b1-fp16-adam,rnd29_150/b1-fp16-adam,rnd29_71/b1-fp16-adam &
finish
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace26b-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
