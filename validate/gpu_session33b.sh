#!/usr/bin/env bash
# Session 33's second device call: training data (seqtrace33b), not blind. Whole
# allocation event sequences of blind29's misses once it was compared:
# st_tf_mobilenetv3_small_075 (the largest batch 4.0% over: memest 22.84 GiB at the GPU's
# 2846, the GPU 23.79; b2-fp32 2.7% under), at 2846 under the 24 GiB cap and in fp32;
# the 2-D random nets most under (rnd37_162 -20.5%, rnd37_57 -8.3%, rnd37_111 -5.3%) and
# most over (rnd37_70 +48.9%); st_hrnet_w32 bf16 (legacy +15.4%, dynamo +0.5%) and
# st_vit_tiny_r_s16_p8_384 bf16 (reserved +16.1%).
#   bash validate/gpu_session33b.sh SECONDS
set -u
budget=${1:-300} L=/tmp/logs33b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 st_tf_mobilenetv3_small_075/bs2846-fp16-adam 24GiB &
seqtrace t2 rnd37_162/b1-fp16-adam,rnd37_57/b1-fp16-adam,rnd37_111/b1-fp16-adam,rnd37_70/b1-fp16-adam &
seqtrace t3 st_tf_mobilenetv3_small_075/b2-fp32-adam,st_hrnet_w32/b1-bf16-adamw,st_vit_tiny_r_s16_p8_384/b1-bf16-adamw &
finish
for f in /tmp/res/seq-*.jsonl; do xz -9 -k "$f"; done
cat /tmp/res/seq-*.jsonl > /tmp/res/all.jsonl && xz -9 -c /tmp/res/all.jsonl > $OUT/seqtrace33b-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 4 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
