#!/bin/bash
# One call on the GPU machine: everything validate/ measures, inside a fixed time.
#   A (GPU): measure the whole zoo           -> $OUT/results.jsonl
#   B (GPU): traces, then checkpoint, then maxbatch -> $OUT/{traces,checkpoint,maxbatch}.jsonl
#   C (CPU): export the zoo with this torch  -> $OUT/models.tar.gz
# The caching allocator is per process, so A's and B's numbers do not mix; they share
# only the card's 139 GiB, far more than both use. Logs -> $OUT/logs.tar.gz.
# Usage: OUT=/some/dir bash validate/gpu_run.sh [SECONDS]   (default 510)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/validate_out}
BUDGET=${1:-510}
MEASURE_ARGS=${MEASURE_ARGS:-}
B_STAGES=${B_STAGES:-traces,checkpoint,maxbatch}
EXPORT=${EXPORT:-1}
mkdir -p "$OUT" /tmp/vlogs
T0=$(date +%s)
END=$((T0 + BUDGET))
left() { echo $((END - $(date +%s))); }

{
  date; nvidia-smi; python3 -c 'import torch, torchvision, onnx; print(torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torchvision.__version__, onnx.__version__)'
  python3 -c 'import transformers; print("transformers", transformers.__version__)'
} > /tmp/vlogs/env.txt 2>&1

if [ "$EXPORT" = 1 ]; then
  (
    timeout -k 5 $(( $(left) - 25 )) python3 -m validate export --out /tmp/models --readme-root /tmp/models \
      --torchscript /tmp/models/torchscript > /tmp/vlogs/export.log 2>&1
    echo "export rc=$?" >> /tmp/vlogs/export.log
    tar czf "$OUT/models.tar.gz" -C /tmp models
  ) &
fi

(
  case ",$B_STAGES," in *,traces,*)
    timeout -k 5 $(( $(left) - 30 )) python3 -m validate measure --only-trace --trace default \
      --trace-out "$OUT/traces.jsonl" --out /tmp/vlogs/trace_rows.jsonl --deadline $((END - 240)) \
      > /tmp/vlogs/traces.log 2>&1 ;;
  esac
  case ",$B_STAGES," in *,checkpoint,*)
    timeout -k 5 $(( $(left) - 30 )) python3 -m validate checkpoint --out "$OUT/checkpoint.jsonl" \
      --deadline $((END - 170)) > /tmp/vlogs/checkpoint.log 2>&1 ;;
  esac
  case ",$B_STAGES," in *,maxbatch,*)
    timeout -k 5 $(( $(left) - 15 )) python3 -m validate maxbatch --budget 24GiB --out "$OUT/maxbatch.jsonl" \
      --deadline $((END - 40)) > /tmp/vlogs/maxbatch.log 2>&1 ;;
  esac
) &

timeout -k 5 $(( $(left) - 15 )) python3 -m validate measure --out "$OUT/results.jsonl" --deadline $((END - 30)) \
  $MEASURE_ARGS 2>&1 | tee /tmp/vlogs/measure.log | grep -v '^case '
wait
echo "=== traces"; grep -v '^case ' /tmp/vlogs/traces.log | tail -12
echo "=== checkpoint"; grep -v '^case ' /tmp/vlogs/checkpoint.log | tail -10
echo "=== maxbatch"; grep -v '^  ' /tmp/vlogs/maxbatch.log | tail -16
echo "=== export"; tail -25 /tmp/vlogs/export.log
tar czf "$OUT/logs.tar.gz" -C /tmp vlogs
echo "total $(( $(date +%s) - T0 ))s"; ls -la "$OUT"
