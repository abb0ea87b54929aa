#!/usr/bin/env bash
# Session 34's third device call: training data (seqtrace34c). A 1-D convolution copies a
# strided input, and a strided gradient in backward (Convolution.cpp, seqtrace34's
# sh_data2vec-audio_aud and rnd38_187); random modules that moved farther when memest
# modelled it: rnd15_77 (+1.5% -> +8.0%), rnd34_136 (-0.1% -> +2.9%), rnd27_173
# (+0.1% -> +2.4%), all 1-D nets with a LayerNorm between transposes.
#   bash validate/gpu_session34c.sh SECONDS
set -u
budget=${1:-120} L=/tmp/logs34c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 rnd15_77/b1-fp16-adamw &
seqtrace t2 rnd34_136/b1-fp16-adam &
seqtrace t3 rnd27_173/b1-fp16-adam &
finish
cat /tmp/res/seq-*.jsonl | xz -9 > $OUT/seqtrace34c-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
