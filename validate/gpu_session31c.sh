#!/usr/bin/env bash
# Session 31's third device call: the whole allocation event sequences (seqtrace31c) of
# blind27's misses, compared once at eea2a43 (training data from now on): timm's test
# models under in fp32 (st_test_resnet -13.5%, st_test_convnext2 -16.8%: the GPU's
# backward peak is 40-50 MiB above memest's), the mixed-RoPE ViT under (-5.3% bf16, -7.9%
# fp32; its largest batch +8.5% over) and st_mnasnet_100 over (+12.7% bf16).
#   bash validate/gpu_session31c.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-200} L=/tmp/logs31c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace t1 st_test_resnet/b2-fp32-adam,st_test_convnext2/b2-fp32-adam,st_mnasnet_100/b1-bf16-adamw &
seqtrace t2 st_vit_small_patch16_rope_mixed_ape_224/b1-bf16-adamw,st_vit_small_patch16_rope_mixed_ape_224/b2-fp32-adam &
finish
cat /tmp/res/seq-*.jsonl > $OUT/seqtrace31c-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
