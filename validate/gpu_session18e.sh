#!/usr/bin/env bash
# Session 18's sixth GPU call: allocator traces (traces27) of blind14's misses, training
# data once blind14 was compared: st_nest_small_jx (-32.7% legacy), st_poolformerv2_m36
# (-3.5% / -4.2%, as poolformerv2_s12 before), rnd22_34 (-47.9%), rnd22_15 (-46.4%).
#   bash validate/gpu_session18e.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs18e; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace sample:20:30 s20a b1-bf16-adamw st_nest_small_jx &
trace sample:20:30 s20b b2-fp32-adam st_poolformerv2_m36 &
trace random:22:200 r22a b1-fp16-adam rnd22_34,rnd22_15 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces27-$tag.jsonl
tar -cJf $OUT/logs-session18e.tar.xz -C /tmp logs18e
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
