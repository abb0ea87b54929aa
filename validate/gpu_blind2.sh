#!/usr/bin/env bash
# Session 8's fresh blind sample (issue 18), measured once and compared once:
# architectures drawn at random from timm and transformers (validate/sample.py, seed
# 8) and random modules of two new generator seeds (3, 4), each through both exporters.
#   bash validate/gpu_blind2.sh SECONDS
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
budget=${1:-200}
t0=$(date +%s)
tag=h200-torch2.11
mkdir -p /tmp/logs /tmp/res /tmp/matrix
# Random modules first: they need no draw.
python3 -m validate measure --set random:3:100 --configs b1-fp16-adam --deadline $((t0 + budget)) \
    --out /tmp/res/r3.jsonl > /tmp/logs/m-r3.log 2>&1 &
python3 -m validate measure --set random:4:100 --configs b2-fp32-adamw --deadline $((t0 + budget)) \
    --out /tmp/res/r4.jsonl > /tmp/logs/m-r4.log 2>&1 &
( python3 -m validate matrix --set random:3:100 --out /tmp/matrix --jobs 4 --deadline $((t0 + budget)) \
      --variants legacy-train-dyn,dynamo-train-dyn
  python3 -m validate matrix --set random:4:100 --out /tmp/matrix --jobs 4 --deadline $((t0 + budget)) \
      --variants legacy-train-dyn,dynamo-train-dyn ) > /tmp/logs/x-random.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(8, 36)))" 2>/tmp/logs/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
python3 -m validate measure --set sample:8:36 --models "$h1" --configs b1-fp32-adam,b1-bf16-adamw \
    --deadline $((t0 + budget)) --out /tmp/res/s1.jsonl > /tmp/logs/m-s1.log 2>&1 &
python3 -m validate measure --set sample:8:36 --models "$h2" --configs b1-fp32-adam,b1-bf16-adamw \
    --deadline $((t0 + budget)) --out /tmp/res/s2.jsonl > /tmp/logs/m-s2.log 2>&1 &
python3 -m validate matrix --set sample:8:36 --models "$names" --out /tmp/matrix --jobs 6 \
    --deadline $((t0 + budget)) --variants legacy-train-dyn,dynamo-train-dyn > /tmp/logs/x-sample.log 2>&1 &
wait
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample8-$tag.jsonl
cat /tmp/res/r3.jsonl /tmp/res/r4.jsonl > $OUT/random34-$tag.jsonl
tar -cJf $OUT/matrix-blind2.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs-blind2.tar.xz -C /tmp logs
for f in /tmp/logs/*.log; do echo "== $f"; tail -n 2 "$f"; done
