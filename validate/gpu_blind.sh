#!/bin/bash
# A GPU call for the blind set (validate/zoo.py BLIND: models nobody tuned or probed on).
#   CPU: export the blind set with this torch      -> $OUT/blind_models.tar.gz (blind/*.onnx)
#   GPU: measure the blind set, 8 configs each      -> $OUT/blind_all.jsonl
#   GPU: largest batch under 24 GiB for three of them -> $OUT/blind_maxbatch.jsonl
# Side by side (each process has its own caching allocator). Logs -> $OUT/blind_logs.tar.gz.
# Usage: OUT=/some/dir bash validate/gpu_blind.sh [SECONDS]   (default 500)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/validate_out}
BUDGET=${1:-500}
mkdir -p "$OUT" /tmp/vlogs
T0=$(date +%s)
END=$((T0 + BUDGET))
left() { echo $((END - $(date +%s))); }
(
  timeout -k 5 $(( $(left) - 40 )) python3 -m validate export --set blind --out /tmp/mb --readme-root /tmp/mb \
    > /tmp/vlogs/export.log 2>&1
  echo "export rc=$?" >> /tmp/vlogs/export.log
  tar czf "$OUT/blind_models.tar.gz" -C /tmp/mb blind
) &
(
  timeout -k 5 $(( $(left) - 30 )) python3 -m validate maxbatch --set blind --budget 24GiB \
    --models resnet101,mobilenet_v3_large,roberta_hf --out "$OUT/blind_maxbatch.jsonl" --deadline $((END - 60)) \
    > /tmp/vlogs/maxbatch.log 2>&1
) &
timeout -k 5 $(( $(left) - 25 )) python3 -m validate measure --set blind --out "$OUT/blind_all.jsonl" \
  --deadline $((END - 50)) 2>&1 | tee /tmp/vlogs/measure.log | grep -v '^case '
wait
echo "=== maxbatch"; grep -v '^  ' /tmp/vlogs/maxbatch.log | tail -8
echo "=== export"; tail -14 /tmp/vlogs/export.log
tar czf "$OUT/blind_logs.tar.gz" -C /tmp vlogs
echo "total $(( $(date +%s) - T0 ))s"; ls -la "$OUT"
