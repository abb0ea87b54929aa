#!/usr/bin/env bash
# Session 9's GPU call (issues 18 and 19), before anything is tuned:
#  - the fresh blind sample of session 8's plan (validate/sample.py seed 8: architectures
#    drawn at random from timm and transformers; random-generator seeds 3 and 4), measured
#    and exported through both exporters, compared once afterwards;
#  - the largest batch under 24 GiB for ten of the drawn architectures (protocol's sweep);
#  - the fine-tuning set (validate/finetune.py) measured and exported;
#  - random seeds 1 and 2 measured again (session 8 lost 326 of 400 cases to the cuDNN
#    dropout state; the worker now restarts).
# Several measuring processes share the GPU: each reads its own allocator's counters.
#   bash validate/gpu_session9.sh SECONDS   (the deadline for starting new work)
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
budget=${1:-420}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs; mkdir -p $L /tmp/res /tmp/matrix /tmp/ft
m() { python3 -m validate measure --deadline $dl "$@"; }
m --set random:3:100 --configs b1-fp16-adam --out /tmp/res/r3.jsonl > $L/m-r3.log 2>&1 &
m --set random:4:100 --configs b2-fp32-adamw --out /tmp/res/r4.jsonl > $L/m-r4.log 2>&1 &
m --set finetune --out /tmp/res/ft.jsonl > $L/m-ft.log 2>&1 &
m --set random:1:100 --configs b1-fp32-adam,b2-bf16-adamw --out /tmp/res/r1.jsonl > $L/m-r1.log 2>&1 &
m --set random:2:100 --configs b1-fp16-adam,b1-fp32-sgdm --out /tmp/res/r2.jsonl > $L/m-r2.log 2>&1 &
( python3 -m validate matrix --set random:3:100 --out /tmp/matrix --jobs 3 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn
  python3 -m validate matrix --set random:4:100 --out /tmp/matrix --jobs 3 --deadline $dl \
      --variants legacy-train-dyn,dynamo-train-dyn ) > $L/x-random.log 2>&1 &
( python3 -m validate export --set finetune --out /tmp/ft
  python3 -m validate export --set finetune --out /tmp/ft/dynamo --exporters dynamo ) > $L/x-ft.log 2>&1 &
names=$(python3 -c "from validate import sample; print(','.join(sample.draw(8, 36)))" 2>$L/draw.log)
echo "drawn: $names"
h1=$(echo "$names" | tr ',' '\n' | awk 'NR%2==1' | paste -sd,)
h2=$(echo "$names" | tr ',' '\n' | awk 'NR%2==0' | paste -sd,)
mb1=$(echo "$names" | tr ',' '\n' | sed -n '1,5p' | paste -sd,)
mb2=$(echo "$names" | tr ',' '\n' | sed -n '6,10p' | paste -sd,)
m --set sample:8:36 --models "$h1" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s1.jsonl > $L/m-s1.log 2>&1 &
m --set sample:8:36 --models "$h2" --configs b1-fp32-adam,b1-bf16-adamw --out /tmp/res/s2.jsonl > $L/m-s2.log 2>&1 &
for part in mb1 mb2; do
  python3 -m validate maxbatch --set sample:8:36 --models "${!part}" --configs fp16-adam --budget 24GiB \
      --deadline $dl --out /tmp/res/$part.jsonl > $L/$part.log 2>&1 &
done
python3 -m validate matrix --set sample:8:36 --models "$names" --out /tmp/matrix --jobs 4 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-sample.log 2>&1 &
# Whatever still runs 110 s after the deadline is stopped, so that the files come back.
( sleep $((dl + 110 - $(date +%s))); pkill -f "validate (measure|matrix|maxbatch|export)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/s1.jsonl /tmp/res/s2.jsonl > $OUT/sample8-$tag.jsonl
cat /tmp/res/r3.jsonl /tmp/res/r4.jsonl > $OUT/random34-$tag.jsonl
cat /tmp/res/r1.jsonl /tmp/res/r2.jsonl > $OUT/random12-remeasure-$tag.jsonl
cat /tmp/res/mb1.jsonl /tmp/res/mb2.jsonl > $OUT/sample8-maxbatch-$tag.jsonl
cp /tmp/res/ft.jsonl $OUT/finetune-$tag.jsonl
tar -cJf $OUT/matrix-blind2.tar.xz -C /tmp/matrix .
tar -cJf $OUT/finetune-models.tar.xz -C /tmp/ft .
tar -cJf $OUT/logs-session9.tar.xz -C /tmp logs
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
