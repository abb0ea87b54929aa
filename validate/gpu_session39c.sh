#!/usr/bin/env bash
# Session 39's third device call (issue 18): a fresh blind sample (blind35: sample seed
# 42, random seed 43) measured after the session's last change (17c4d8c), compared once at
# it, committed unread first. Nothing else.
#   bash validate/gpu_session39c.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-320} L=/tmp/logs39c
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 42 43
finish
collect_blind 42 43 35
tar -cJf $OUT/logs-session39c.tar.xz -C /tmp logs39c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
