#!/usr/bin/env bash
# Session 40's first device call (issue 18): a fresh blind sample (blind36: sample seed
# 43, random seed 44), compared once at the session start's binary before any change,
# committed unread first. Nothing else: the device refused most calls of sessions 37 to
# 39, and what it lends goes to the blind sample first.
#   bash validate/gpu_session40.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs40
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 43 44
finish
collect_blind 43 44 36
tar -cJf $OUT/logs-session40.tar.xz -C /tmp logs40
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
