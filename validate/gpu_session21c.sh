#!/usr/bin/env bash
# Session 21's third GPU call (issue 18, training data, not blind): allocator traces
# (traces35) of blind17's misses, compared once at e1c0776: random25's unders (rnd25_51
# -39%, a 2-D 7x7 conv net; rnd25_20 -16%, 3-D), sample23's bf16 under st_efficientvit_b3
# (-3.9%) and overs st_spnasnet_100 (+11.8%) and st_efficientnet_b0_gn (+5.1%), and
# sh_blenderbot-small_lm bf16 (legacy -2.3%).
#   bash validate/gpu_session21c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs21c; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace random:25:200 t1 b1-fp16-adam rnd25_51,rnd25_20 &
trace sample:23:30 t2 b1-bf16-adamw st_efficientvit_b3 &
trace sample:23:30 t3 b1-bf16-adamw st_spnasnet_100,st_efficientnet_b0_gn &
trace sample:23:30 t4 b1-bf16-adamw sh_blenderbot-small_lm &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces35-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f" | cut -c1-300; done
echo "total $(( $(date +%s) - t0 ))s"
