#!/usr/bin/env bash
# Session 30's device call (issue 18): a fresh blind sample (blind26: sample seed 32,
# random seed 34), measured and committed unread; beside it, the whole allocation event
# sequences (seqtrace30) of blind25's random-module misses (random33, b1-fp16-adam, at
# e614268's estimate, measured on the H200: rnd33_102 -15.2%, rnd33_130 -12.3%,
# rnd33_122 -6.4%, rnd33_43 -3.3% under, rnd33_2 +17.9% over) and of sh_jetmoe_lm at
# batch 512 (its largest-batch search runs -5.9% low in memest at scale, dynamo) and of
# sh_jetmoe_cls b2-fp32-adam (a select of each expert's weight is a view: +5.2% -> -3.7%).
# Training data, not blind.
#   bash validate/gpu_session30.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-430} L=/tmp/logs30
# the card in the file names: the device may lend an H100 for an H200
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 32 34
seqtrace t1 rnd33_102/b1-fp16-adam,rnd33_130/b1-fp16-adam,rnd33_43/b1-fp16-adam,sh_jetmoe_cls/b2-fp32-adam &
seqtrace t2 rnd33_122/b1-fp16-adam,rnd33_2/b1-fp16-adam,sh_jetmoe_lm/bs512-fp16-adam &
finish
collect_blind 32 34 26
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace30-$tag.jsonl
tar -cJf $OUT/logs-session30.tar.xz -C /tmp logs30
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
