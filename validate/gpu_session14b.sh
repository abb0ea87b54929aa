#!/usr/bin/env bash
# Session 14's second GPU call: the end-of-session blind sample, part 2: 80 random modules
# (seed 15, b1-fp16-adamw), measured and exported through both exporters; compared once at
# the end of the session, with part 1 (gpu_session14.sh).
#   bash validate/gpu_session14b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs14b; mkdir -p $L /tmp/res /tmp/matrix15
python3 -m validate measure --deadline $dl --set random:15:80 --configs b1-fp16-adamw --out /tmp/res/r15.jsonl > $L/m-r15.log 2>&1 &
python3 -m validate matrix --set random:15:80 --out /tmp/matrix15 --jobs 12 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r15.log 2>&1 &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|matrix)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/r15.jsonl $OUT/random15-$tag.jsonl
tar -cJf $OUT/matrix-blind8b.tar.xz -C /tmp/matrix15 .
tar -cJf $OUT/logs-session14b.tar.xz -C /tmp logs14b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
