#!/usr/bin/env bash
# Session 31's device call (issue 18): a fresh blind sample (blind27: sample seed 33,
# random seed 35), measured and committed unread; beside it, training data, not blind:
# the whole allocation event sequences (seqtrace31) of blind26's CNNs memest puts high
# (the peak at a dense 1x1 layer's weight gradient, where conv.cc's pointwise_wgrad takes
# the per-sample GEMM's fp32 partials: st_lcnetv2_small +6.6%, st_tf_mobilenetv3_large_100
# +5.3%, sh_hgnet_v2_img +4.6%, st_mnasnet_140 +4.0%, st_xception41p +4.0%,
# st_levit_conv_192 +3.3%), and random 1x1 layers drawn where that rule is least sure
# (convprobe --family pointwise-leaf, seed 61 to fit, 62 to check, with their kernels).
#   bash validate/gpu_session31.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-440} L=/tmp/logs31
# the card in the file names: the device may lend an H100 for an H200
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 33 35
seqtrace t1 st_lcnetv2_small/b1-bf16-adamw,st_tf_mobilenetv3_large_100/b1-bf16-adamw,st_mnasnet_140/b1-bf16-adamw,st_mnasnet_140/b2-fp32-adam &
seqtrace t2 sh_hgnet_v2_img/b1-bf16-adamw,st_xception41p/b1-bf16-adamw,st_levit_conv_192/b2-fp32-adam &
( for s in 61 62; do
    python3 -m validate convprobe --family pointwise-leaf --seed $s --n 300 --kernels --deadline $dl \
      --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1
  done ) &
finish
collect_blind 33 35 27
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace31-$tag.jsonl
cat /tmp/res/cp-*.jsonl > $OUT/convprobe-pointwise-leaf-$tag.jsonl
tar -cJf $OUT/logs-session31.tar.xz -C /tmp logs31
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
