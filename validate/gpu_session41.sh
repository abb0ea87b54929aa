#!/usr/bin/env bash
# Session 41's first device call (issue 18): a fresh blind sample (blind38: sample seed
# 45, random seed 46), committed unread first, compared once at the session start's binary.
#   bash validate/gpu_session41.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs41
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 45 46
finish
collect_blind 45 46 38
tar -cJf $OUT/logs-session41.tar.xz -C /tmp logs41
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
