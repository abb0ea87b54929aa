#!/usr/bin/env bash
# Session 27's device call (issue 18): a fresh blind sample (blind23: sample seed 29,
# random seed 31), measured and committed unread; beside it, the whole allocation event
# sequences (seqtrace27) of the 1-D and 2-D convolution nets blind22 missed (random30,
# b1-fp16-adam, at 3edb269's estimate: rnd30_74 -17.6%, rnd30_182 -6.9%, rnd30_38 -4.2%,
# rnd30_109 +37.9%, rnd30_55 +19.6%, rnd30_75 +19.9%) and of blind21's 1-D/2-D misses whose
# session-26 sequences were lost with that session's machine (rnd29_9 -15.9%, rnd29_129
# -9.1%, rnd29_185 -6.1%). Training data, not blind.
#   bash validate/gpu_session27.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-440} L=/tmp/logs27
# the card in the file names: the device may lend an H100 for an H200
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 29 31
seqtrace t1 rnd30_74/b1-fp16-adam,rnd30_109/b1-fp16-adam,rnd30_38/b1-fp16-adam,rnd29_9/b1-fp16-adam,rnd29_185/b1-fp16-adam &
seqtrace t2 rnd30_182/b1-fp16-adam,rnd30_55/b1-fp16-adam,rnd30_75/b1-fp16-adam,rnd29_129/b1-fp16-adam &
finish
collect_blind 29 31 23
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace27-$tag.jsonl
tar -cJf $OUT/logs-session27.tar.xz -C /tmp logs27
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
