#!/usr/bin/env bash
# Session 22's third GPU call (issue 18, training data, not blind): allocator traces
# (traces38) of more random unders no trace held: 1-D nets (rnd3_24 transposed -12.5%,
# rnd21_2 circular -6.5%, rnd15_7 -3.4%), 2-D nets (rnd2_3 fp32 sgdm -9.8%, rnd18_104 bf16
# transposed -5.5%, rnd21_149 -5.3%, rnd16_111 fp32 -4.0%, rnd6_90 transposed -3.8%,
# rnd21_199 -3.7%, rnd22_125 circular -3.6%).
#   bash validate/gpu_session22c.sh SECONDS
set -u
export PYTHONUNBUFFERED=1
budget=${1:-240}
t0=$(date +%s)
dl=$((t0 + budget))
tag=h200-torch2.11
L=/tmp/logs22c; mkdir -p $L /tmp/res
m() { python3 -m validate measure --deadline $dl "$@"; }
trace() {  # SET OUTNAME CONFIG MODELS
  m --set $1 --models $4 --configs $3 \
    --trace $(echo $4 | tr ',' '\n' | sed "s|\$|/$3|" | paste -sd,) --only-trace --trace-detail \
    --trace-out /tmp/res/tr-$2.jsonl > $L/tr-$2.log 2>&1
}
trace random:3:100 t1 b1-fp16-adam rnd3_24 &
trace random:2:100 t2 b1-fp32-sgdm rnd2_3 &
trace random:21:200 t3 b1-fp16-adam rnd21_2,rnd21_149,rnd21_199 &
trace random:18:120 t4 b2-bf16-adamw rnd18_104 &
trace random:16:120 t5 b2-fp32-adam rnd16_111 &
trace random:6:120 t6 b1-fp16-adam rnd6_90 &
trace random:22:200 t7 b1-fp16-adam rnd22_125 &
trace random:15:80 t8 b1-fp16-adamw rnd15_7 &
( sleep $((dl + 60 - $(date +%s))); pkill -f "validate measure" ) &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
cat /tmp/res/tr-*.jsonl > $OUT/traces38-$tag.jsonl
for f in $L/*.log; do echo "== $f"; tail -n 2 "$f" | cut -c1-300; done
echo "total $(( $(date +%s) - t0 ))s"
