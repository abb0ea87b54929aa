#!/usr/bin/env bash
# Session 13's second GPU call:
#  - the end-of-session blind sample, part 2: 80 random modules (seed 13, b1-fp16-adamw),
#    measured and exported through both exporters; compared once at the end of the
#    session, with part 1 (gpu_session13.sh);
#  - a disjoint check of the RNN workspace rule fitted on kernels-rnngrid (grid seed 1):
#    the same random grid drawn with seed 2 (validate kernels --parts rnngrid --grid-seed 2).
#   bash validate/gpu_session13b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs13b; mkdir -p $L /tmp/res /tmp/matrix13
python3 -m validate measure --deadline $dl --set random:13:80 --configs b1-fp16-adamw --out /tmp/res/r13.jsonl > $L/m-r13.log 2>&1 &
python3 -m validate matrix --set random:13:80 --out /tmp/matrix13 --jobs 10 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r13.log 2>&1 &
python3 -m validate kernels --parts rnngrid --grid-seed 2 --deadline $dl --out /tmp/res/rnngrid2.jsonl > $L/rnngrid2.log 2>&1 &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|matrix|kernels)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/r13.jsonl $OUT/random13-$tag.jsonl
cp /tmp/res/rnngrid2.jsonl $OUT/kernels-rnngrid2-$tag.jsonl
tar -cJf $OUT/matrix-blind7b.tar.xz -C /tmp/matrix13 .
tar -cJf $OUT/logs-session13b.tar.xz -C /tmp logs13b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
