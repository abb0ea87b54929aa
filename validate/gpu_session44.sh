#!/usr/bin/env bash
# Session 44's first device call (issue 18): blind42 (sample seed 49, random seed 50),
# committed unread, compared once at the session start's binary. The draw holds timm's
# models up to 300 M parameters (session 43): slower to measure and export, so the
# deadline for new work is longer than before (blind41 at 330 s left 8 architectures
# unmeasured and 14 unexported; gpu_session43c.sh finished them).
#   bash validate/gpu_session44.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-420} L=/tmp/logs44
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 49 50
finish
collect_blind 49 50 42
tar -cJf $OUT/logs-session44.tar.xz -C /tmp logs44
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
