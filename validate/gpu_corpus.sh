#!/usr/bin/env bash
# The GPU-machine call of session 8 (issues 17 and 18): the corpus and two random seeds
# measured (protocol's loop; several measuring processes share the GPU: each reads its
# own allocator's counters), the export matrix on the CPUs beside them, and cuDNN
# workspaces on a random grid. Everything lands in $OUT (at most 8 files).
#   bash validate/gpu_corpus.sh SECONDS    (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
budget=${1:-420}
dl=$(( $(date +%s) + budget ))
tag=h200-torch2.11
log=/tmp/logs; mkdir -p $log /tmp/matrix /tmp/res
names=$(python3 -c "from validate.corpus import CORPUS; print(','.join(e.name for e in CORPUS))")
half1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
half2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
cfg=b1-fp32-adam,b1-fp16-adam,b1-bf16-adamw,b2-fp32-sgdm
python3 -m validate measure --set corpus --models "$half1" --configs $cfg --deadline $dl \
    --out /tmp/res/corpus-a.jsonl > $log/measure-corpus-a.log 2>&1 &
python3 -m validate measure --set corpus --models "$half2" --configs $cfg --deadline $dl \
    --out /tmp/res/corpus-b.jsonl > $log/measure-corpus-b.log 2>&1 &
python3 -m validate measure --set random:1:100 --configs b1-fp32-adam,b2-bf16-adamw --deadline $dl \
    --out /tmp/res/random1.jsonl > $log/measure-random1.log 2>&1 &
python3 -m validate measure --set random:2:100 --configs b1-fp16-adam,b1-fp32-sgdm --deadline $dl \
    --out /tmp/res/random2.jsonl > $log/measure-random2.log 2>&1 &
( python3 -m validate convprobe --seed 1 --n 900 --deadline $((dl - 120)) --out /tmp/res/convprobe1.jsonl
  python3 -m validate convprobe --seed 2 --n 400 --deadline $dl --out /tmp/res/convprobe2.jsonl ) > $log/convprobe.log 2>&1 &
python3 -m validate matrix --set corpus --out /tmp/matrix --jobs 7 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn,dynamo-eval-dyn > $log/matrix-corpus.log 2>&1 &
( python3 -m validate matrix --set random:1:100 --out /tmp/matrix --jobs 5 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn
  python3 -m validate matrix --set random:2:100 --out /tmp/matrix --jobs 5 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn ) > $log/matrix-random.log 2>&1 &
wait
cat /tmp/res/corpus-a.jsonl /tmp/res/corpus-b.jsonl > $OUT/corpus-$tag.jsonl
cat /tmp/res/random1.jsonl /tmp/res/random2.jsonl > $OUT/random-$tag.jsonl
cat /tmp/res/convprobe1.jsonl /tmp/res/convprobe2.jsonl | xz -9 > $OUT/convprobe-$tag.jsonl.xz
tar -cJf $OUT/matrix.tar.xz -C /tmp/matrix .
tar -cJf $OUT/logs.tar.xz -C /tmp logs
ls -la $OUT; tail -3 $log/*.log
