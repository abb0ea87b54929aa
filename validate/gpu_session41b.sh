#!/usr/bin/env bash
# Session 41's second device call: gpu_session41.sh's seqtraces again, with the cap spelt
# with its unit (a bare "60" is 60 bytes: every case ran out of memory at its first
# allocation).
#   bash validate/gpu_session41b.sh SECONDS
set -u
budget=${1:-120} L=/tmp/logs41b
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace o1 st_ecaresnet26t/b1-bf16-adamw,st_resnet50_mlp/b1-bf16-adamw,st_eca_halonext26ts/b1-bf16-adamw 60GiB &
seqtrace o2 wav2letter/b2-fp32-sgdm,wav2letter/b1-fp32-adam,st_test_convnext2/b2-fp32-adam,st_test_resnet/b2-fp32-adam 60GiB &
finish
cat /tmp/res/seq-o*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session41-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 5 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
