#!/bin/bash
# The third GPU call: hold-out set, detailed traces of the cases memest gets wrong, context reserve.
#   1 (GPU, alone first): CUDA context reserve                -> $OUT/context.jsonl
#   2 (CPU): export the hold-out set with this torch            -> $OUT/holdout_models.tar.gz (holdout/*.onnx)
#   3 (GPU): traces of measure.TRACES2, every live block, module / autograd-node labels -> $OUT/traces2.jsonl
#   4 (GPU): measure the hold-out set, 8 configs each           -> $OUT/holdout_all.jsonl
# 2-4 run side by side (each process has its own caching allocator). Logs -> $OUT/logs.tar.gz.
# holdout_all.jsonl holds every measured row; the committed holdout-*.jsonl keeps the rows of
# models whose export succeeded (compare needs the graph).
# Usage: OUT=/some/dir bash validate/gpu_holdout.sh [SECONDS]   (default 480)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/validate_out}
BUDGET=${1:-480}
mkdir -p "$OUT" /tmp/vlogs
T0=$(date +%s)
END=$((T0 + BUDGET))
left() { echo $((END - $(date +%s))); }

{
  date; nvidia-smi; python3 -c 'import torch, torchvision, onnx; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torchvision.__version__, onnx.__version__)'
  python3 -c 'import transformers; print("transformers", transformers.__version__)'
  env | grep -E '^(CUDA|PYTORCH|NCCL)' | sort
} > /tmp/vlogs/env.txt 2>&1

timeout -k 5 90 python3 -m validate context --out "$OUT/context.jsonl" 2>&1 | tee /tmp/vlogs/context.log

(
  timeout -k 5 $(( $(left) - 40 )) python3 -m validate export --set holdout --out /tmp/mh --readme-root /tmp/mh \
    > /tmp/vlogs/export.log 2>&1
  echo "export rc=$?" >> /tmp/vlogs/export.log
  tar czf "$OUT/holdout_models.tar.gz" -C /tmp/mh holdout
) &

(
  timeout -k 5 $(( $(left) - 30 )) python3 -m validate measure --only-trace --trace traces2 --trace-detail \
    --trace-frames 6 --trace-out "$OUT/traces2.jsonl" --out /tmp/vlogs/trace_rows.jsonl --deadline $((END - 90)) \
    > /tmp/vlogs/traces.log 2>&1
  echo "traces rc=$?" >> /tmp/vlogs/traces.log
) &

timeout -k 5 $(( $(left) - 25 )) python3 -m validate measure --set holdout --out "$OUT/holdout_all.jsonl" \
  --deadline $((END - 50)) 2>&1 | tee /tmp/vlogs/measure.log | grep -v '^case '
wait
echo "=== traces"; grep -v '^case ' /tmp/vlogs/traces.log | tail -12
echo "=== export"; tail -14 /tmp/vlogs/export.log
tar czf "$OUT/logs.tar.gz" -C /tmp vlogs
echo "total $(( $(date +%s) - T0 ))s"; ls -la "$OUT"
