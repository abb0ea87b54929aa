#!/usr/bin/env bash
# Session 39's last device call (issue 18), training data: whole allocation sequences of
# two mobile nets memest puts 8-13% over in bf16 at batch 16 (st_mnasnet_100,
# st_efficientnet_lite0), whose 1x1 projection's weight-gradient workspace the measured
# table holds at a flat 90 MiB because batch 64 took it (x + y at 32, 96 and 128): does
# batch 16 take x + y?
#   bash validate/gpu_session39d.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-120} L=/tmp/logs39d
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
seqtrace m1 st_mnasnet_100/b1-bf16-adamw &
seqtrace m2 st_efficientnet_lite0/b1-bf16-adamw &
finish
cat /tmp/res/seq-m*.jsonl 2>/dev/null | xz > $OUT/seqtrace-session39-$tag.jsonl.xz
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
