#!/usr/bin/env bash
# Session 32's device call (issue 18): a fresh blind sample (blind28: sample seed 34, random
# seed 36; the draw now takes a third of its names from transformers' audio classifiers and
# segmenters and torchvision's classifiers, segmenters and video classifiers), measured
# and committed unread; beside it, training data, not blind: the whole allocation event
# sequences (seqtrace32) of the 2-D and 1-D random conv nets memest puts lowest (random33
# to 35 at the session's start: rnd35_166 -13.0%, rnd34_20 -30.7%, rnd3_24 -12.5%,
# rnd33_130 -12.3%, rnd35_66 -6.4%, rnd35_110 -4.0%, rnd35_180 -3.8%) and one 3-D
# (rnd35_39 -6.3%).
#   bash validate/gpu_session32.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-440} L=/tmp/logs32
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 34 36
seqtrace t1 rnd35_166/b1-fp16-adam,rnd35_66/b1-fp16-adam,rnd35_110/b1-fp16-adam,rnd35_180/b1-fp16-adam &
seqtrace t2 rnd34_20/b1-fp16-adam,rnd3_24/b1-fp16-adam,rnd33_130/b1-fp16-adam,rnd35_39/b1-fp16-adam &
finish
collect_blind 34 36 28
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace32-$tag.jsonl
tar -cJf $OUT/logs-session32.tar.xz -C /tmp logs32
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
