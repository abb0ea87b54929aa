#!/usr/bin/env bash
# Session 31's fifth device call: rows of memest's H200 cuDNN table probed again on the
# card the device lends (convprobe --family table, seeds 81 and 82): does an H100 pick the
# engines an H200 picked? blind27's st_mnasnet_100 (H100) took 26 MB in a layer whose row
# says 94 MB; the blind samples of sessions 27, 28, 30 and 31 were measured on H100s and
# compared with the H200 profile.
#   bash validate/gpu_session31e.sh SECONDS   (the deadline for starting new work)
set -u
budget=${1:-200} L=/tmp/logs31e
case "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" in *H100*) tag=h100-torch2.11;; *) tag=h200-torch2.11;; esac
source validate/gpu_lib.sh
for s in 81 82; do
  python3 -m validate convprobe --family table --seed $s --n 400 --deadline $dl \
    --out /tmp/res/cp-$s.jsonl > $L/cp-$s.log 2>&1 &
done
finish
cat /tmp/res/cp-*.jsonl > $OUT/convprobe-table-$tag.jsonl
wc -l /tmp/res/cp-*.jsonl
echo "total $(( $(date +%s) - t0 ))s"
