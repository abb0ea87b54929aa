#!/usr/bin/env bash
# Session 34's second device call: training data (seqtrace34), after blind30's comparison.
# Whole allocation event sequences of blind30's misses: sh_data2vec-audio_aud b2-fp32-adam
# (legacy -14.0%, its largest batch -22.4%), st_hgnetv2_b1 b2-fp32-adam (dynamo +6.4%, its
# largest batch +3.4% over), sv_shufflenet_v2_x1_5 b1-bf16-adamw (dynamo +11.0%), and the
# random modules most under: rnd38_3 (2-D, -23.4%), rnd38_73 (2-D 7x7, -13.1%), rnd38_5 and
# rnd38_128 (3-D 7x7x7, -26.4% / -15.9%), rnd38_187 (1-D, legacy -5.1%).
#   bash validate/gpu_session34b.sh SECONDS
set -u
budget=${1:-200} L=/tmp/logs34b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 sh_data2vec-audio_aud/b2-fp32-adam,sv_shufflenet_v2_x1_5/b1-bf16-adamw &
seqtrace t2 st_hgnetv2_b1/b2-fp32-adam,rnd38_187/b1-fp16-adam &
seqtrace t3 rnd38_3/b1-fp16-adam,rnd38_73/b1-fp16-adam,rnd38_5/b1-fp16-adam,rnd38_128/b1-fp16-adam &
finish
cat /tmp/res/seq-*.jsonl | xz -9 > $OUT/seqtrace34-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
