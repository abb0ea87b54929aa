#!/usr/bin/env bash
# Session 35's first device call (issue 18): a fresh blind sample (blind31: sample seed 38,
# random seed 39), measured and committed unread, compared once before any change of the
# session; then, once the blind part is done and alone no more matters, session 34's unrun
# training data (seqtrace34c: three random 1-D nets that moved farther when memest modelled
# the 1-D convolution copies: rnd15_77, rnd34_136, rnd27_173).
#   bash validate/gpu_session35.sh SECONDS   (the deadline for starting the blind work)
set -u
budget=${1:-360} L=/tmp/logs35
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 38 39
finish
collect_blind 38 39 31
echo "blind part $(( $(date +%s) - t0 ))s"
dl=$(( $(date +%s) + 75 ))
seqtrace t1 rnd15_77/b1-fp16-adamw &
seqtrace t2 rnd34_136/b1-fp16-adam &
seqtrace t3 rnd27_173/b1-fp16-adam &
finish
cat /tmp/res/seq-*.jsonl | xz -9 > $OUT/seqtrace34c-$tag.jsonl.xz
tar -cJf $OUT/logs-session35.tar.xz -C /tmp logs35
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
