#!/usr/bin/env bash
# Session 11's second GPU call: the end-of-session blind sample, part 2 — 80 random modules
# (seed 9, b2-bf16-adamw), measured and exported through both exporters. Compared once at
# the end of the session, with part 1 (gpu_session11.sh).
#   bash validate/gpu_session11b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs11b; mkdir -p $L /tmp/res /tmp/matrix9
python3 -m validate measure --deadline $dl --set random:9:80 --configs b2-bf16-adamw --out /tmp/res/r9.jsonl > $L/m-r9.log 2>&1 &
python3 -m validate matrix --set random:9:80 --out /tmp/matrix9 --jobs 10 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r9.log 2>&1 &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|matrix)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/r9.jsonl $OUT/random9-$tag.jsonl
tar -cJf $OUT/matrix-blind5b.tar.xz -C /tmp/matrix9 .
tar -cJf $OUT/logs-session11b.tar.xz -C /tmp logs11b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
