#!/usr/bin/env bash
# Session 15's third GPU call, after the blind comparison: allocator traces (traces23) of
# the blind sample's misses, training data for session 16: rnd16_50 (-10.6%), rnd16_57
# (-10.1%), rnd16_64 (-6.2% legacy), rnd17_21 (-7.5%), rnd17_51 (-5.8%); and the largest
# overestimates st_test_convnext fp32 (+44% legacy) and st_resnetv2_50d fp16 (+24%).
#   bash validate/gpu_session15c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-150}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs15c; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace random:16:120 r16 b2-fp32-adam rnd16_50,rnd16_57,rnd16_64 &
trace random:17:80 r17 b1-fp16-adamw rnd17_21,rnd17_51 &
trace sample:15:30 s15a b1-fp32-adamw st_test_convnext &
trace sample:15:30 s15b b1-fp16-adam st_resnetv2_50d &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces23-$tag.jsonl
tar -cJf $OUT/logs-session15c.tar.xz -C /tmp logs15c
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f"; done
echo "total $(( $(date +%s) - t0 ))s"
