#!/usr/bin/env bash
# Session 12's second GPU call: the end-of-session blind sample, part 2 — 80 random modules
# (seed 11, b1-fp16-adamw), measured and exported through both exporters. Compared once at
# the end of the session, with part 1 (gpu_session12.sh).
#   bash validate/gpu_session12b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs12b; mkdir -p $L /tmp/res /tmp/matrix11
python3 -m validate measure --deadline $dl --set random:11:80 --configs b1-fp16-adamw --out /tmp/res/r11.jsonl > $L/m-r11.log 2>&1 &
python3 -m validate matrix --set random:11:80 --out /tmp/matrix11 --jobs 10 --deadline $dl \
    --variants legacy-train-dyn,dynamo-train-dyn > $L/x-r11.log 2>&1 &
( sleep $((dl + 80 - $(date +%s))); pkill -f "validate (measure|matrix)" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cp /tmp/res/r11.jsonl $OUT/random11-$tag.jsonl
tar -cJf $OUT/matrix-blind6b.tar.xz -C /tmp/matrix11 .
tar -cJf $OUT/logs-session12b.tar.xz -C /tmp logs12b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
