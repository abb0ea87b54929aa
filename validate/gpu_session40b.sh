#!/usr/bin/env bash
# Session 40's second device call (issue 18), training data: whole allocation sequences of
# blind36's underestimates, to find the mechanism before any change: the 2-D and 1-D
# random nets memest puts under with no bound (rnd44_48 -14.4%, rnd44_122 -11.9%,
# rnd44_153 -6.5%, rnd44_72 -3.8%), the 3-D ones under even at the bound (rnd44_52,
# rnd44_25), and the one drawn architecture under (st_coat_lite_small bf16 -2.3%; its
# largest batch under 24 GiB +2.7% over).
#   bash validate/gpu_session40b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-150} L=/tmp/logs40b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace u1 rnd44_48/b1-fp16-adam,rnd44_122/b1-fp16-adam,rnd44_153/b1-fp16-adam,rnd44_72/b1-fp16-adam &
seqtrace u2 rnd44_52/b1-fp16-adam,rnd44_25/b1-fp16-adam,rnd44_21/b1-fp16-adam &
seqtrace u3 st_coat_lite_small/b1-bf16-adamw,st_coat_lite_small/bs261-fp16-adam &
finish
cat /tmp/res/seq-u*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session40-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
