#!/usr/bin/env bash
# Session 45's first device call (issue 18): blind43 (sample seed 50, random seed 51),
# committed unread, compared once. Session 44's device refused four starts (about 1,180 s
# of its 1,800 s), so blind42 ran with a 200 s deadline (9 architectures, 100 modules): if
# starts are refused again, pass a shorter deadline rather than lose the sample. The
# deadline counts from the start, and the draw's imports take 30-60 s of it.
# After it, on the emptied card, GPU sequences of blind42's worst misses: rnd50_84 (a 3-D
# convolution net, backward 370 MB on the GPU against memest's 157), rnd50_15 (-7.4%) and
# rnd50_2 (-6.5%). NASNet-A large's sequences are in session 44's
# seqtrace-session44-cap-h100-torch2.11.jsonl.xz already.
#   bash validate/gpu_session45.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-400} L=/tmp/logs45
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 50 51
finish
collect_blind 50 51 43
dl=$(( $(date +%s) + 60 ))
seqtrace r50 rnd50_84/b1-fp16-adam,rnd50_15/b1-fp16-adam,rnd50_2/b1-fp16-adam
xz -c /tmp/res/seq-r50.jsonl > $OUT/seqtrace-session45-r50-$tag.jsonl.xz
tar -cJf $OUT/logs-session45.tar.xz -C /tmp logs45
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
