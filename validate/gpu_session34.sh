#!/usr/bin/env bash
# Session 34's first device call (issue 18): a fresh blind sample (blind30: sample seed 37,
# random seed 38), measured and committed unread, compared once before any change of the
# session. Nothing else runs beside it, so the blind measurements have the GPU to themselves.
#   bash validate/gpu_session34.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-440} L=/tmp/logs34
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
blind_sample 37 38
finish
collect_blind 37 38 30
tar -cJf $OUT/logs-session34.tar.xz -C /tmp logs34
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
