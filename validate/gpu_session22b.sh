#!/usr/bin/env bash
# Session 22's second GPU call (issue 18, training data, not blind): allocator traces
# (traces37) of earlier random sets' unders that no trace held: stacked fp32 RNNs (rnd14_75
# -7.1%, rnd12_74 -6.9%, rnd10_8 -5.5%, rnd16_37 -4.9%, rnd16_36 -4.3%, rnd12_11 -3.2%), a
# random transformer (rnd14_85 -3.6%) and 2-D conv nets (rnd2_5 fp32 sgdm -28.4%, rnd1_29
# bf16 -10.3%, rnd21_157 -7.8%, rnd22_8 -5.7%).
#   bash validate/gpu_session22b.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs22b; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace random:14:120 t1 b2-fp32-adam rnd14_75,rnd14_85 &
trace random:12:120 t2 b2-fp32-adam rnd12_74,rnd12_11 &
trace random:10:120 t3 b2-fp32-adam rnd10_8 &
trace random:16:120 t4 b2-fp32-adam rnd16_37,rnd16_36 &
trace random:2:100 t5 b1-fp32-sgdm rnd2_5 &
trace random:1:100 t6 b2-bf16-adamw rnd1_29 &
trace random:21:200 t7 b1-fp16-adam rnd21_157 &
trace random:22:200 t8 b1-fp16-adam rnd22_8 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces37-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 3 "$f" | cut -c1-300; done
echo "total $(( $(date +%s) - t0 ))s"
