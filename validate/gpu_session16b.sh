#!/usr/bin/env bash
# Session 16's second GPU call: allocator traces (traces24) of session 15's second blind
# sample's misses (blind10, training data now): rnd18_5 (-53.9%, 3-D), rnd18_64 (-19.2%),
# rnd18_81 (-13.1%), rnd18_58 (-9.6%), rnd18_95 (-7.4% legacy), rnd18_78, rnd18_9;
# st_hiera_small_224 fp16 (-8.8% legacy) and st_mvitv2_base fp32 (-3.2%).
#   bash validate/gpu_session16b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs16b; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace random:18:120 r18a b2-bf16-adamw rnd18_5,rnd18_64 &
trace random:18:120 r18b b2-bf16-adamw rnd18_81,rnd18_58 &
trace random:18:120 r18c b2-bf16-adamw rnd18_95,rnd18_78,rnd18_9 &
trace sample:16:30 s16a b1-fp16-adam st_hiera_small_224 &
trace sample:16:30 s16b b1-fp32-adamw st_mvitv2_base &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces24-$tag.jsonl
tar -cJf $OUT/logs-session16b.tar.xz -C /tmp logs16b
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
