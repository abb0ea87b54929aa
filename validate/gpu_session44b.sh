#!/usr/bin/env bash
# Session 44's device call (issue 18), cut to the budget four refused starts left (about
# 630 s of device time, a start included): blind42 (sample seed 49, random seed 50) with a
# short deadline for new work, committed unread and compared once at the session's last
# binary; then GPU sequences of blind41's NASNet-A large (its forward's peak stands 800 MB
# above its forward's end at batch 8 fp32, where memest's stands 47 MB above).
#   bash validate/gpu_session44b.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-200} L=/tmp/logs44
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
rm -rf /tmp/res /tmp/matrix  # a warm machine keeps the last call's files
source validate/gpu_lib.sh
blind_sample 49 50
finish
collect_blind 49 50 42
dl=$(( $(date +%s) + 45 ))
seqtrace cap st_nasnetalarge/b1-bf16-adamw,st_nasnetalarge/b2-fp32-adam 24GiB
xz -c /tmp/res/seq-cap.jsonl > $OUT/seqtrace-session44-cap-$tag.jsonl.xz
tar -cJf $OUT/logs-session44.tar.xz -C /tmp logs44
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
