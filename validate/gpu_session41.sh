#!/usr/bin/env bash
# Session 41's first device call (issue 18): blind37 (sample seed 44, random seed
# 45; session 40 drew none: the device refused its last six calls),
# committed unread first, compared once at the session start's binary.
#   bash validate/gpu_session41.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs41
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 44 45
# Training data beside it: blind36's three bf16 overestimates at batch 16 (memest's peak
# at a dense 1x1 layer's per-sample GEMM partials, 64 MiB in st_ecaresnet26t's layer4).
seqtrace o1 st_ecaresnet26t/b1-bf16-adamw,st_resnet50_mlp/b1-bf16-adamw,st_eca_halonext26ts/b1-bf16-adamw 60 &
# The committed architectures' worst fp32 unders (session 41): wav2letter -37% at batch 32
# (memest flat from batch 16 to 32 where the GPU rose 256 MiB: a 1-D conv's workspace),
# timm's test_convnext2 -16.8% and test_resnet -13.5% at b2-fp32-adam.
seqtrace o2 wav2letter/b2-fp32-sgdm,wav2letter/b1-fp32-adam,st_test_convnext2/b2-fp32-adam,st_test_resnet/b2-fp32-adam 60 &
finish
collect_blind 44 45 37
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session41-$tag.jsonl.xz
tar -cJf $OUT/logs-session41.tar.xz -C /tmp logs41
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
